package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/config"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// buildFleet makes the fleet from the static upstreams, or from DNS.
func buildFleet(cfg config.Config, log *slog.Logger) (*upstream.Fleet, error) {
	dopts := discoverOptions(&cfg, log)
	if dopts == nil {
		return upstream.New(upstreamSpecs(&cfg))
	}
	d, err := upstream.NewDiscoverer(dopts)
	if err != nil {
		return nil, usageError{err}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	specs, err := d.Resolve(ctx)
	if err != nil {
		return nil, fmt.Errorf("discovering replicas: %w", err)
	}
	return upstream.New(specs)
}

// background runs loops (a service's health checks and DNS discovery,
// the process's reloads on SIGHUP) until stop, which waits for them.
type background struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newBackground() *background {
	ctx, cancel := context.WithCancel(context.Background())
	return &background{ctx: ctx, cancel: cancel}
}

// startReloads makes SIGHUP read the certificate files again and, if path
// is not "", re-read the config file and apply its services' upstreams
// (services.go, reload). The handler is in place before this returns: a
// signal sent once the gateway serves is never the default one, which
// exits.
func (rg *runningGateway) startReloads(cfg config.Config, path string) {
	rg.bg = newBackground()
	if len(cfg.Services) == 0 && cfg.Discovery.DNSName != "" {
		path = "" // DNS owns the one fleet
	}
	if path == "" && len(rg.certs) == 0 {
		return
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	grace := time.Duration(cfg.Grace)
	rg.bg.wg.Go(func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-rg.bg.ctx.Done():
				return
			case <-hup:
			}
			for _, c := range rg.certs {
				c.reload(rg.log)
			}
			if path != "" {
				rg.reload(path, grace)
			}
		}
	})
}

// reload re-reads the config file and applies it. A file that does not
// validate, or a change that needs a restart, changes nothing.
func (rg *runningGateway) reload(path string, grace time.Duration) {
	cfg, err := config.Load(path)
	if err == nil && len(cfg.Services) == 0 && cfg.Discovery.DNSName != "" {
		err = fmt.Errorf("discovery cannot be turned on by a reload; restart instead")
	}
	if err == nil {
		// A rule that does not compile leaves the running rules.
		_, err = checkAuthz(&cfg, path)
	}
	if err == nil {
		err = rg.svcs.reload(cfg, grace)
	}
	if err != nil {
		rg.log.Error("reload refused: nothing changed", "error", err.Error())
	}
}

// stop ends the background loops and waits for them.
func (b *background) stop() {
	if b == nil {
		return
	}
	b.cancel()
	b.wg.Wait()
}

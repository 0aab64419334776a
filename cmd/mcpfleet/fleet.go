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

// background runs the fleet's loops: health checks, DNS discovery and
// reloads on SIGHUP. Stop ends them and waits.
type background struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func (rg *runningGateway) startBackground(cfg config.Config, configPath string, fleet *upstream.Fleet) error {
	ctx, cancel := context.WithCancel(context.Background())
	rg.bg = &background{cancel: cancel}
	if copts := checkOptions(&cfg, rg.gw.Metrics().HealthChanged, rg.log); copts != nil {
		checker, err := upstream.NewChecker(fleet, copts)
		if err != nil {
			cancel()
			return usageError{err}
		}
		rg.bg.wg.Go(func() { _ = checker.Run(ctx) })
	}
	dopts := discoverOptions(&cfg, rg.log)
	if dopts != nil {
		d, err := upstream.NewDiscoverer(dopts)
		if err != nil {
			cancel()
			return usageError{err}
		}
		rg.bg.wg.Go(func() { d.Run(ctx, fleet) })
	}
	// SIGHUP re-reads the upstreams (unless DNS owns the fleet) and the
	// certificates. The handler is in place before this returns: a signal
	// sent once the gateway serves is never the default one, which exits.
	if dopts != nil {
		configPath = ""
	}
	if configPath != "" || len(rg.certs) > 0 {
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		rg.bg.wg.Go(func() {
			defer signal.Stop(hup)
			rg.reloadOnHangup(ctx, hup, configPath, fleet)
		})
	}
	return nil
}

// reloadOnHangup, on each SIGHUP, reads the certificate files again, then,
// if path is not "", re-reads the config file and swaps in its upstreams.
// A pair or a file that does not load changes nothing of its own; requests
// and connections in flight keep their replicas and certificates either way.
func (rg *runningGateway) reloadOnHangup(ctx context.Context, hup <-chan os.Signal, path string, fleet *upstream.Fleet) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		for _, c := range rg.certs {
			c.reload(rg.log)
		}
		if path != "" {
			rg.reloadUpstreams(path, fleet)
		}
	}
}

// reloadUpstreams re-reads the config file and swaps in its upstreams. A
// file that does not validate changes nothing.
func (rg *runningGateway) reloadUpstreams(path string, fleet *upstream.Fleet) {
	cfg, err := config.Load(path)
	if err == nil && cfg.Discovery.DNSName != "" {
		err = fmt.Errorf("discovery cannot be turned on by a reload; restart instead")
	}
	if err != nil {
		rg.log.Error("reload refused: nothing changed", "error", err.Error())
		return
	}
	change, err := fleet.Update(upstreamSpecs(&cfg))
	if err != nil {
		rg.log.Error("reload refused: nothing changed", "error", err.Error())
		return
	}
	if err := rg.gw.SetMaxInflight(maxInflight(&cfg)); err != nil {
		rg.log.Warn("reload: the upstreams' max_inflight is not applied", "error", err.Error())
	}
	rg.log.Info("reloaded upstreams", "added", change.Added, "removed", change.Removed)
}

// stop ends the background loops and waits for them.
func (b *background) stop() {
	if b == nil {
		return
	}
	b.cancel()
	b.wg.Wait()
}

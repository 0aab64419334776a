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
	dopts := cfg.DiscoverOptions(log)
	if dopts == nil {
		return upstream.New(cfg.Specs())
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
	if copts := cfg.CheckOptions(rg.gw.Metrics().HealthChanged, rg.log); copts != nil {
		checker, err := upstream.NewChecker(fleet, copts)
		if err != nil {
			cancel()
			return usageError{err}
		}
		rg.bg.wg.Go(func() { _ = checker.Run(ctx) })
	}
	if dopts := cfg.DiscoverOptions(rg.log); dopts != nil {
		d, err := upstream.NewDiscoverer(dopts)
		if err != nil {
			cancel()
			return usageError{err}
		}
		rg.bg.wg.Go(func() { d.Run(ctx, fleet) })
	} else if configPath != "" {
		rg.bg.wg.Go(func() { rg.reloadOnHangup(ctx, configPath, fleet) })
	}
	return nil
}

// reloadOnHangup re-reads the config file on SIGHUP and swaps in its
// upstreams. A file that does not validate changes nothing; requests in
// flight keep their replicas either way.
func (rg *runningGateway) reloadOnHangup(ctx context.Context, path string, fleet *upstream.Fleet) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		cfg, err := config.Load(path)
		if err == nil && cfg.Discovery.DNSName != "" {
			err = fmt.Errorf("discovery cannot be turned on by a reload; restart instead")
		}
		if err != nil {
			rg.log.Error("reload refused: nothing changed", "error", err.Error())
			continue
		}
		change, err := fleet.Update(cfg.Specs())
		if err != nil {
			rg.log.Error("reload refused: nothing changed", "error", err.Error())
			continue
		}
		rg.log.Info("reloaded upstreams", "added", change.Added, "removed", change.Removed)
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

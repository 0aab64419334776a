package chaos

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/gateway"
	"github.com/mcpfleet/mcpfleet/internal/session"
	"github.com/mcpfleet/mcpfleet/internal/testserver"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// fleet is the system under test: replicas, the shared ledger and, rolling
// the replicas, the gateway on its loopback listener and the health
// checker (rolling the gateways, those are processes: gatewayFleet).
type fleet struct {
	o          *Options
	replicas   []*replica
	ledger     *testserver.Ledger
	ledgerPath string
	upstream   *upstream.Fleet
	gw         *gateway.Gateway
	srv        *http.Server
	url        string // the gateway's MCP endpoint

	stopChecks context.CancelFunc
	closeOnce  sync.Once
	bg         sync.WaitGroup // the gateway's Serve and the checker
}

// startFleet starts o.Replicas replicas sharing a ledger in dir and, with
// RollReplicas, the gateway in front of them, and waits until it sees
// every replica up.
func startFleet(ctx context.Context, o *Options, dir string) (*fleet, error) {
	f := &fleet{o: o, ledgerPath: filepath.Join(dir, "ledger")}
	var err error
	if f.ledger, err = testserver.OpenLedger(f.ledgerPath); err != nil {
		return nil, err
	}
	if err := f.startReplicas(); err != nil {
		f.close()
		return nil, err
	}
	if o.Roll == RollGateways {
		return f, nil
	}
	if err := f.startGateway(); err != nil {
		f.close()
		return nil, err
	}
	for _, r := range f.replicas {
		if err := f.waitUp(ctx, r.name); err != nil {
			f.close()
			return nil, err
		}
	}
	return f, nil
}

// startReplicas starts the replicas on free loopback ports.
func (f *fleet) startReplicas() error {
	drain, grace := f.o.DrainDelay, f.o.Grace
	if f.o.Kill == KillHard || f.o.Roll == RollGateways {
		// A killed process drains nothing and runs nothing more: Serve's
		// shutdown after the kill only ends the handlers left behind.
		// Rolling the gateways, the replicas stop only once the traffic
		// is over, as if killed.
		drain, grace = 0, time.Nanosecond
	}
	if grace == 0 {
		grace = time.Nanosecond // testserver reads 0 as its 15 s default
	}
	for i := range f.o.Replicas {
		r := &replica{
			name:   fmt.Sprintf("replica-%c", 'a'+i),
			addr:   "127.0.0.1:0",
			ledger: f.ledger,
			drain:  drain,
			grace:  grace,
			log:    f.o.Logger,
		}
		if err := r.start(); err != nil {
			return err
		}
		f.replicas = append(f.replicas, r)
	}
	return nil
}

// startGateway serves a gateway in front of the replicas on a loopback
// port, with active health checks every HealthInterval.
func (f *fleet) startGateway() error {
	var specs []upstream.Spec
	for _, r := range f.replicas {
		specs = append(specs, upstream.Spec{Name: r.name, URL: r.url()})
	}
	var err error
	if f.upstream, err = upstream.New(specs); err != nil {
		return err
	}
	keys, err := randomKeyring()
	if err != nil {
		return err
	}
	// The gateway warns on every forward a kill cuts: that is the point.
	if f.gw, err = gateway.New(f.upstream, nil, &gateway.Options{Keyring: keys}); err != nil {
		return err
	}
	checker, err := upstream.NewChecker(f.upstream, &upstream.CheckOptions{
		Interval: f.o.HealthInterval,
		Timeout:  500 * time.Millisecond,
		OnChange: f.gw.Metrics().HealthChanged,
		Logger:   f.o.Logger,
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listening for the gateway: %w", err)
	}
	f.url = "http://" + ln.Addr().String() + "/mcp"
	f.srv = &http.Server{Handler: f.gw, ReadHeaderTimeout: 10 * time.Second}
	checkCtx, stop := context.WithCancel(context.Background())
	f.stopChecks = stop
	f.bg.Go(func() { _ = checker.Run(checkCtx) }) // returns nil when stopped
	f.bg.Go(func() {
		if err := f.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			f.o.Logger.Error("gateway stopped serving", "error", err)
		}
	})
	return nil
}

// randomKeyring seals legacy session IDs for this run only.
func randomKeyring() (*session.Keyring, error) {
	k := session.Key{ID: 1}
	if _, err := rand.Read(k.Secret[:]); err != nil {
		return nil, fmt.Errorf("making a session key: %w", err)
	}
	return session.NewKeyring([]session.Key{k})
}

// waitUp returns once the gateway sees replica name up, or fails after
// 15 s.
func (f *fleet) waitUp(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		if rep := f.upstream.Snapshot().Lookup(name); rep != nil && rep.State() == upstream.StateUp {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to be up: %w", name, ctx.Err())
		case <-t.C:
		}
	}
}

// RestartEvent is one replica's (or gateway's) stop and restart, in time
// from the start of the traffic.
type RestartEvent struct {
	// Replica names the replica restarted, with RollReplicas.
	Replica string `json:"replica,omitempty"`
	// Gateway names the gateway process restarted, with RollGateways.
	Gateway string `json:"gateway,omitempty"`
	// Stop is when the replica (or gateway) got SIGTERM or SIGKILL.
	Stop time.Duration `json:"stop"`
	// Out is when HAProxy saw the stopping gateway down and sent it no
	// more work; RollGateways only.
	Out time.Duration `json:"out,omitempty"`
	// Cut is when calls still in flight were killed: the kill itself, or
	// the end of the grace if calls were left then; -1 if none were.
	Cut time.Duration `json:"cut"`
	// Down is when the replica had stopped (Serve returned), or the
	// gateway process had exited.
	Down time.Duration `json:"down"`
	// Up is when the gateway saw the restarted replica up again, or
	// HAProxy the restarted gateway.
	Up time.Duration `json:"up"`
	// Served counts the calls (tools/call) the gateway process had
	// answered when it got SIGTERM, InFlight the requests it was
	// forwarding then, and Drained the calls it answered after (as of its
	// last scrape before it exited: at least that many); RollGateways only.
	Served   int `json:"served,omitempty"`
	InFlight int `json:"in_flight,omitempty"`
	Drained  int `json:"drained,omitempty"`
}

// endpoint is the gateway's MCP URL.
func (f *fleet) endpoint() string { return f.url }

// finish stops the fleet and reads the gateway's counters into r.
func (f *fleet) finish(_ context.Context, r *Report) error {
	f.close()
	ss, err := gather(f.gw.Metrics().Registry())
	if err != nil {
		return err
	}
	r.addCounters(ss)
	return nil
}

// roll stops and restarts every replica in turn, each on its own
// address, waiting until the gateway sees it up before the next.
func (f *fleet) roll(ctx context.Context, t0 time.Time) ([]RestartEvent, error) {
	var events []RestartEvent
	for _, r := range f.replicas {
		ev := RestartEvent{Replica: r.name, Stop: time.Since(t0), Cut: -1}
		f.o.Logger.Info("stopping replica", "replica", r.name, "mode", f.o.Kill)
		cut, err := r.stop(f.o.Kill == KillHard)
		ev.Down = time.Since(t0)
		switch {
		case f.o.Kill == KillHard:
			ev.Cut = ev.Stop
		case cut:
			ev.Cut = ev.Stop + f.o.DrainDelay + f.o.Grace
			f.o.Logger.Info("replica cut calls in flight", "replica", r.name, "error", err)
		}
		if err := sleep(ctx, f.o.Downtime); err != nil {
			return events, err
		}
		if err := r.start(); err != nil {
			return events, err
		}
		if err := f.waitUp(ctx, r.name); err != nil {
			return events, err
		}
		ev.Up = time.Since(t0)
		f.o.Logger.Info("replica back up", "replica", r.name, "down_for", (ev.Up - ev.Stop).Round(time.Millisecond))
		events = append(events, ev)
	}
	return events, nil
}

// close stops the gateway, the checker and the replicas, and closes the
// ledger. The replicas get no drain: the traffic is over. It is idempotent.
func (f *fleet) close() { f.closeOnce.Do(f.closeNow) }

func (f *fleet) closeNow() {
	if f.srv != nil {
		_ = f.srv.Close() // the traffic is over; whatever is left is cut
	}
	if f.gw != nil {
		f.gw.Close()
	}
	if f.stopChecks != nil {
		f.stopChecks()
	}
	f.bg.Wait()
	var wg sync.WaitGroup
	for _, r := range f.replicas {
		wg.Go(func() { _, _ = r.stop(true) }) // the traffic is over: cuts count for nothing
	}
	wg.Wait()
	if f.ledger != nil {
		_ = f.ledger.Close() // read-only from here on; nothing to flush
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testserver"
)

// Run starts the fleet, sends the traffic, restarts every replica (or
// gateway) in turn in the middle of it, and reports. A nil opts means the
// defaults. Run binds loopback ports only, stops every process it started
// and removes its files when done.
func Run(ctx context.Context, opts *Options) (*Report, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	o := opts.withDefaults()
	dir, err := os.MkdirTemp("", "mcpfleet-chaos-")
	if err != nil {
		return nil, fmt.Errorf("making the run's directory: %w", err)
	}
	defer os.RemoveAll(dir)

	f, err := startFleet(ctx, &o, dir)
	if err != nil {
		return nil, err
	}
	defer f.close()
	var fr front = f
	if o.Roll == RollGateways {
		g, err := startGateways(ctx, &o, dir, f.replicas)
		if err != nil {
			return nil, err
		}
		defer g.close()
		fr = g
	}
	o.Logger.Info("fleet up", "url", fr.endpoint(), "roll", o.Roll, "gateways", o.Gateways, "replicas", o.Replicas, "era", o.Era, "kill", o.Kill)

	tr := &traffic{
		o:       &o,
		t0:      time.Now(),
		timeout: o.Cap + o.DrainDelay + o.Grace + 5*time.Second,
	}
	for i := range o.Sessions {
		tr.clients = append(tr.clients, newClient(i, fr.endpoint(), protocolVersion(o.Era)))
	}
	events, err := drive(ctx, fr, tr)
	for _, c := range tr.clients {
		c.close()
	}
	if err != nil {
		return nil, err
	}
	return report(ctx, &o, f, fr, tr, events)
}

// front is what the clients call and the rolling restart restarts: the
// in-process gateway in front of the replicas (fleet, RollReplicas), or
// gateway processes behind HAProxy (gatewayFleet, RollGateways).
type front interface {
	// endpoint is the MCP URL the clients call.
	endpoint() string
	// roll restarts every replica or gateway in turn.
	roll(ctx context.Context, t0 time.Time) ([]RestartEvent, error)
	// finish reads the gateways' counters into r and stops the front.
	finish(ctx context.Context, r *Report) error
}

var (
	_ front = (*fleet)(nil)
	_ front = (*gatewayFleet)(nil)
)

// drive runs the traffic and, from RestartAt, the rolling restart; the
// traffic goes on until the restart is over plus one second.
func drive(ctx context.Context, fr front, tr *traffic) ([]RestartEvent, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	restarted := make(chan struct{})
	var events []RestartEvent
	var restartErr error
	go func() {
		defer close(restarted)
		if restartErr = sleep(ctx, tr.o.RestartAt); restartErr != nil {
			return
		}
		tr.o.Logger.Info("rolling restart begins")
		events, restartErr = fr.roll(ctx, tr.t0)
		if restartErr != nil {
			cancel() // a replica or gateway that does not come back ends the run
			return
		}
		_ = sleep(ctx, time.Second) // an error is ctx's, reported below
	}()
	tr.run(ctx, restarted)
	<-restarted
	if restartErr != nil && !errors.Is(restartErr, context.Canceled) {
		return events, fmt.Errorf("rolling restart: %w", restartErr)
	}
	if err := ctx.Err(); err != nil {
		return events, err
	}
	return events, nil
}

// report gathers the figures once the traffic is over.
func report(ctx context.Context, o *Options, f *fleet, fr front, tr *traffic, events []RestartEvent) (*Report, error) {
	r := &Report{
		Era: o.Era, Roll: o.Roll, Gateways: o.Gateways, Kill: o.Kill, IdempotencyKeys: o.IdempotencyKeys,
		DrainDelay: o.DrainDelay, Grace: o.Grace, Rate: o.Rate, Seed: o.Seed,
		Replicas: o.Replicas, Sessions: o.Sessions, Restarts: events,
	}
	if o.Kill == KillHard {
		r.DrainDelay, r.Grace = 0, 0
	}
	if n := len(tr.records); n > 0 && len(tr.records[n-1].attempts) > 0 {
		r.Traffic = tr.records[n-1].attempts[0].Start
	}
	r.tally(tr.records, events, tr.clients)
	// The ledger is read with the fleet stopped, so that no legacy call
	// left running upstream (its client gone) mutates after the count.
	if err := fr.finish(ctx, r); err != nil {
		return nil, err
	}
	f.close()
	file, err := os.Open(f.ledgerPath)
	if err != nil {
		return nil, fmt.Errorf("opening the ledger: %w", err)
	}
	defer file.Close()
	entries, err := testserver.ReadLedger(file)
	if err != nil {
		return nil, err
	}
	r.audit(tr.records, entries)
	return r, nil
}

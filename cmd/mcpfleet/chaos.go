package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/mcpfleet/mcpfleet/internal/load"
	"github.com/mcpfleet/mcpfleet/internal/sim"
)

// runChaos runs the chaos preset of mcpfleet load (docs/CHAOS.md):
// testserver replicas behind mcpfleet serve, SDK clients sending the lab's
// mix scaled down, in real time, and a rolling restart in the middle, of
// the replicas or (--roll gateways) of gateway processes behind HAProxy.
// The table (or JSON) goes to stdout, progress to stderr.
func runChaos(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("chaos")
	var c load.ChaosOptions
	fs.StringVar(&c.Era, "era", "2026", "clients' protocol `era`: 2025 (2025-11-25 sessions) or 2026 (2026-07-28 stateless)")
	fs.StringVar(&c.Roll, "roll", load.RollReplicas, "the `processes` the rolling restart restarts: replicas, or gateways (mcpfleet serve processes behind HAProxy, sharing a redis-server)")
	fs.IntVar(&c.Gateways, "gateways", 0, "gateway processes, 1 to 12 (default 1; 3 with --roll gateways); HAProxy in front of more than one")
	fs.DurationVar(&c.Grace, "grace", 0, "a stopping replica's (or gateway's) grace for its calls after the drain delay: the drain window (default 5s)")
	fs.DurationVar(&c.DrainDelay, "drain-delay", 0, "how long a stopping replica (or gateway) says it is draining before it stops accepting (default one health interval, 200 ms; five with --roll gateways)")
	fs.StringVar(&c.Kill, "kill", load.KillTerm, "how replicas stop: `signal` term (SIGTERM: drain, then grace) or kill (SIGKILL, at once)")
	fs.BoolVar(&c.IdempotencyKeys, "idempotency-keys", false, "every attempt of a call carries the same _meta io.mcpfleet/idempotency-key")
	fs.DurationVar(&c.Duration, "duration", 0, "traffic, up to 10m (default 12s)")
	fs.Float64Var(&c.Rate, "rate", 0, "Poisson arrivals, calls per second (default 15)")
	fs.Uint64Var(&c.Seed, "seed", 1, "random seed of the traffic")
	fs.IntVar(&c.Replicas, "replicas", 0, "testserver replicas, 1 to 12 (default 3)")
	fs.IntVar(&c.Sessions, "sessions", 0, "client sessions, up to 500 (default 12)")
	fs.DurationVar(&c.Downtime, "downtime", 0, "how long a stopped replica or gateway stays down (default 1s)")
	asJSON := fs.Bool("json", false, "print the run as JSON, in the schema of sim --json")
	quiet := fs.Bool("q", false, "no progress on stderr")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	o, err := load.Chaos(c)
	if err != nil {
		return usageError{err}
	}
	if err := findLoadPrograms(&o); err != nil {
		return usageError{err}
	}
	if err := o.Validate(); err != nil {
		return usageError{err}
	}
	level := slog.LevelInfo
	if *quiet {
		level = slog.LevelError
	} else {
		o.Progress = stderr
	}
	o.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	rep, err := load.Run(ctx, &o)
	if err != nil {
		return err
	}
	if *asJSON {
		return sim.WriteJSON(stdout, rep)
	}
	predicted, err := sim.Run(o.Scenario)
	if err != nil {
		return err
	}
	if err := load.WriteComparison(stdout, rep, predicted, nil); err != nil {
		return err
	}
	if a := rep.Run.Audit; a != nil {
		_, err = fmt.Fprintf(stdout, "audit: %d mutating calls succeeded without their mutation, %d resent by a gateway, %d sent once and applied twice; gateway retries %v\n",
			a.MissingMutations, a.ResentByGateway, a.SingleAttemptDuplicates, a.GatewayRetries)
	}
	return err
}

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/mcpfleet/mcpfleet/internal/chaos"
	"github.com/mcpfleet/mcpfleet/internal/proc"
)

// runChaos runs a chaos run on loopback (internal/chaos, docs/CHAOS.md):
// testserver replicas behind the gateway, SDK clients sending the fleet lab's
// mix, and a rolling restart in the middle, of the replicas or (--roll
// gateways) of gateway processes behind HAProxy. The table (or JSON) goes to
// stdout, progress to stderr.
func runChaos(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	d := chaos.Options{}
	era := fs.String("era", "2026", "clients' protocol era: `2025` (2025-11-25 sessions) or 2026 (2026-07-28 stateless)")
	fs.StringVar(&d.Roll, "roll", chaos.RollReplicas, "what the rolling restart restarts: `replicas` (behind one gateway) or gateways (mcpfleet serve processes behind HAProxy, sharing a redis-server)")
	fs.IntVar(&d.Gateways, "gateways", 0, "gateway processes with --roll gateways, 1 to 5 (default 3)")
	fs.DurationVar(&d.Grace, "grace", 0, "replica's (or gateway's) grace for calls in flight after its drain delay: the drain window (default 5s)")
	fs.DurationVar(&d.DrainDelay, "drain-delay", 0, "replica's /health (or gateway's /readyz) draining window before it stops accepting (default 1s; 3s with --roll gateways)")
	fs.StringVar(&d.Kill, "kill", chaos.KillTerm, "how replicas stop: `term` (drain, grace) or kill (hard, at once)")
	fs.BoolVar(&d.IdempotencyKeys, "idempotency-keys", false, "re-issue calls with the same _meta io.mcpfleet/idempotency-key")
	fs.DurationVar(&d.Duration, "duration", 0, "traffic at least this long, up to 5m (default 12s)")
	fs.Float64Var(&d.Rate, "rate", 0, "Poisson arrivals, calls per second, up to 500 (default 15)")
	fs.Uint64Var(&d.Seed, "seed", 1, "random seed of the traffic")
	fs.IntVar(&d.Replicas, "replicas", 0, "testserver replicas, 1 to 12 (default 3)")
	fs.IntVar(&d.Sessions, "sessions", 0, "client sessions (default 12)")
	fs.DurationVar(&d.Downtime, "downtime", 0, "how long a stopped replica or gateway stays down before restarting (default 1s)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	quiet := fs.Bool("q", false, "no progress on stderr")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch strings.TrimSpace(*era) {
	case "2025", "2025-11-25":
		d.Era = chaos.Era2025
	case "2026", "2026-07-28":
		d.Era = chaos.Era2026
	default:
		return usageError{fmt.Errorf("-era: want 2025 or 2026, got %q", *era)}
	}
	if d.Gateways != 0 && d.Roll != chaos.RollGateways {
		return usageError{fmt.Errorf("-gateways: goes with --roll gateways (rolling the replicas runs one gateway in this process)")}
	}
	if d.Roll == chaos.RollGateways {
		if err := findGatewayPrograms(&d); err != nil {
			return usageError{err}
		}
	}
	if err := d.Validate(); err != nil {
		return usageError{err}
	}
	level := slog.LevelInfo
	if *quiet {
		level = slog.LevelError
	}
	d.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	r, err := chaos.Run(ctx, &d)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	return r.WriteTable(stdout)
}

// findGatewayPrograms fills in what rolling the gateways runs: this very
// binary (its serve command), haproxy and redis-server, naming every one
// that is missing and how to install it.
func findGatewayPrograms(d *chaos.Options) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("--roll gateways runs this binary's serve command: %w", err)
	}
	d.Binary = self
	var missing []string
	if d.HAProxy, err = proc.Lookup("haproxy", "haproxy"); err != nil {
		missing = append(missing, "haproxy")
	}
	if d.RedisServer, err = proc.Lookup("redis-server", "redis-server"); err != nil {
		missing = append(missing, "redis-server")
	}
	if len(missing) > 0 {
		return fmt.Errorf("--roll gateways needs %s, not found on PATH or in /usr/sbin: install it (apt-get install %s)",
			strings.Join(missing, " and "), strings.Join(missing, " "))
	}
	return nil
}

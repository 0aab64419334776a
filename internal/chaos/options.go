// Package chaos is a chaos run anyone can repeat: testserver replicas on
// loopback behind one in-process gateway, real MCP clients (official Go SDK)
// sending the fleet lab's mix of calls, and a rolling restart of every replica in
// the middle of the traffic. It reports what clients saw (calls completed,
// failed, re-issued, 404s) beside what the replicas did (the shared ledger
// of mutations), so that a double charge or a lost call shows as a number.
//
// With [RollGateways] the gateways are what is restarted: several
// mcpfleet serve processes sharing a secret file and a real redis-server,
// behind a real HAProxy that checks their /readyz, each stopped (SIGTERM)
// and started again in turn while the clients go on through HAProxy.
package chaos

import (
	"fmt"
	"log/slog"
	"time"
)

// Protocol eras a run's clients speak, the values of [Options.Era].
const (
	// Era2025 clients open 2025-11-25 sessions, pinned to one replica.
	Era2025 = "2025"
	// Era2026 clients send 2026-07-28 stateless requests.
	Era2026 = "2026"
)

// How a replica is stopped, the values of [Options.Kill].
const (
	// KillTerm is SIGTERM: /health turns draining for the drain delay, then
	// the replica stops accepting and its calls get the grace.
	KillTerm = "term"
	// KillHard is SIGKILL: the listener and every connection close at once
	// and calls in flight end without an answer.
	KillHard = "kill"
)

// What the rolling restart restarts, the values of [Options.Roll].
const (
	// RollReplicas restarts every replica in turn behind one in-process
	// gateway.
	RollReplicas = "replicas"
	// RollGateways restarts every gateway process in turn behind HAProxy;
	// the replicas run on.
	RollGateways = "gateways"
)

// Bounds on a run, so that a typo cannot start an hour of traffic.
const (
	MaxDuration = 5 * time.Minute
	MaxRate     = 500
	MaxReplicas = 12
	MaxSessions = 200
	MaxGateways = 5
)

// Options configures a run. The zero value of each field means the default
// its comment gives; a nil *Options means all defaults.
type Options struct {
	// Era is the clients' protocol era, [Era2025] or [Era2026]; "" means
	// [Era2026].
	Era string
	// Roll is what the rolling restart restarts, [RollReplicas] or
	// [RollGateways]; "" means [RollReplicas].
	Roll string
	// Gateways is how many mcpfleet serve processes run with
	// [RollGateways]; 0 means 3. Unused with [RollReplicas], whose one
	// gateway runs in this process.
	Gateways int
	// Binary is the mcpfleet executable whose serve command the gateway
	// processes run; required with [RollGateways].
	Binary string
	// HAProxy is the haproxy executable in front of the gateway processes;
	// required with [RollGateways].
	HAProxy string
	// RedisServer is the redis-server executable of the store the gateway
	// processes share; required with [RollGateways].
	RedisServer string
	// Replicas is how many testserver replicas run; 0 means 3.
	Replicas int
	// Sessions is how many client sessions share the traffic; 0 means 12.
	Sessions int
	// Duration is how long calls arrive at least; traffic goes on until the
	// rolling restart is over plus one second. 0 means 12 s.
	Duration time.Duration
	// Rate is the mean of the Poisson arrivals, calls per second; 0 means 15.
	Rate float64
	// Median of the log-normal call durations; 0 means 300 ms.
	Median time.Duration
	// Sigma of the log-normal call durations; 0 means 1.0.
	Sigma float64
	// Cap bounds a call's duration; 0 means 3 s.
	Cap time.Duration
	// MutateShare is the fraction of calls that mutate; 0 means 0.4, a
	// negative value means none.
	MutateShare float64
	// DrainDelay is how long a stopped replica's /health (with
	// [RollGateways], a stopped gateway's /readyz) answers draining while
	// it still serves, before it stops accepting; 0 means 1 s (3 s with
	// [RollGateways]: longer than HAProxy takes to see it, two checks 500
	// ms apart), a negative value means none. Unused with [KillHard].
	DrainDelay time.Duration
	// Grace is how long a stopped replica's (or gateway's) calls in flight
	// may run on after the drain delay before they are killed: the
	// deploy's drain window. 0 means 5 s. Unused with [KillHard].
	Grace time.Duration
	// Kill is how replicas are stopped, [KillTerm] or [KillHard]; "" means
	// [KillTerm].
	Kill string
	// Downtime is how long a stopped replica (or gateway) stays down
	// before it restarts on the same address; 0 means 1 s, a negative
	// value means none.
	Downtime time.Duration
	// RestartAt is when the rolling restart begins, from the first call;
	// 0 means a quarter of Duration.
	RestartAt time.Duration
	// IdempotencyKeys makes every attempt of a logical call carry the same
	// _meta io.mcpfleet/idempotency-key; false sends none.
	IdempotencyKeys bool
	// Attempts bounds the attempts of one logical call (the first and its
	// re-issues); 0 means 4.
	Attempts int
	// HealthInterval is the gateways' active health check interval of the
	// replicas; 0 means 200 ms.
	HealthInterval time.Duration
	// Seed makes the traffic repeatable; 0 means 1.
	Seed uint64
	// Logger receives progress lines; nil discards them.
	Logger *slog.Logger
}

// Validate reports options that are out of bounds. A nil o is valid.
func (o *Options) Validate() error {
	if o == nil {
		return nil
	}
	switch {
	case o.Era != "" && o.Era != Era2025 && o.Era != Era2026:
		return fmt.Errorf("validating chaos options: era %q (want %q or %q)", o.Era, Era2025, Era2026)
	case o.Kill != "" && o.Kill != KillTerm && o.Kill != KillHard:
		return fmt.Errorf("validating chaos options: kill %q (want %q or %q)", o.Kill, KillTerm, KillHard)
	case o.Roll != "" && o.Roll != RollReplicas && o.Roll != RollGateways:
		return fmt.Errorf("validating chaos options: roll %q (want %q or %q)", o.Roll, RollReplicas, RollGateways)
	case o.Gateways < 0 || o.Gateways > MaxGateways:
		return fmt.Errorf("validating chaos options: %d gateways (want 1 to %d)", o.Gateways, MaxGateways)
	case o.Replicas < 0 || o.Replicas > MaxReplicas:
		return fmt.Errorf("validating chaos options: %d replicas (want 1 to %d)", o.Replicas, MaxReplicas)
	case o.Sessions < 0 || o.Sessions > MaxSessions:
		return fmt.Errorf("validating chaos options: %d sessions (want 1 to %d)", o.Sessions, MaxSessions)
	case o.Duration < 0 || o.Duration > MaxDuration:
		return fmt.Errorf("validating chaos options: duration %v (want up to %v)", o.Duration, MaxDuration)
	case !(o.Rate >= 0) || o.Rate > MaxRate:
		return fmt.Errorf("validating chaos options: rate %v calls/s (want up to %d)", o.Rate, MaxRate)
	case o.Median < 0 || o.Cap < 0 || o.Cap > time.Minute:
		return fmt.Errorf("validating chaos options: median %v, cap %v (want non-negative, cap up to 1m)", o.Median, o.Cap)
	case !(o.Sigma >= 0) || o.Sigma > 5:
		return fmt.Errorf("validating chaos options: sigma %v (want 0 to 5)", o.Sigma)
	case o.MutateShare > 1 || o.MutateShare != o.MutateShare:
		return fmt.Errorf("validating chaos options: mutate share %v (want at most 1)", o.MutateShare)
	case o.Grace < 0 || o.Grace > time.Minute || o.DrainDelay > time.Minute || o.Downtime > time.Minute:
		return fmt.Errorf("validating chaos options: grace %v, drain delay %v, downtime %v (want up to 1m, grace non-negative)", o.Grace, o.DrainDelay, o.Downtime)
	case o.RestartAt < 0 || o.RestartAt > MaxDuration:
		return fmt.Errorf("validating chaos options: restart at %v (want 0 to %v)", o.RestartAt, MaxDuration)
	case o.Attempts < 0 || o.Attempts > 10:
		return fmt.Errorf("validating chaos options: %d attempts (want 1 to 10)", o.Attempts)
	case o.HealthInterval < 0 || o.HealthInterval > 10*time.Second:
		return fmt.Errorf("validating chaos options: health interval %v (want up to 10s)", o.HealthInterval)
	case o.Roll == RollGateways:
		return o.validateGateways()
	}
	return nil
}

// validateGateways checks what rolling the gateways needs beyond the rest.
func (o *Options) validateGateways() error {
	if o.Kill == KillHard {
		return fmt.Errorf("validating chaos options: roll %q stops gateways with SIGTERM only (kill %q is for replicas)", RollGateways, KillHard)
	}
	if o.HealthInterval != 0 && o.HealthInterval < 100*time.Millisecond {
		return fmt.Errorf("validating chaos options: health interval %v (a gateway process checks at least 100ms apart)", o.HealthInterval)
	}
	for _, b := range []struct{ name, path string }{{"mcpfleet binary", o.Binary}, {"haproxy", o.HAProxy}, {"redis-server", o.RedisServer}} {
		if b.path == "" {
			return fmt.Errorf("validating chaos options: roll %q needs the path of %s", RollGateways, b.name)
		}
	}
	return nil
}

// withDefaults returns a copy of o with every zero field set to its default
// and the "negative means none" fields set to zero.
func (o *Options) withDefaults() Options {
	var v Options
	if o != nil {
		v = *o
	}
	or := func(d *time.Duration, x time.Duration) {
		switch {
		case *d == 0:
			*d = x
		case *d < 0:
			*d = 0
		}
	}
	if v.Era == "" {
		v.Era = Era2026
	}
	if v.Kill == "" {
		v.Kill = KillTerm
	}
	if v.Roll == "" {
		v.Roll = RollReplicas
	}
	if v.Gateways == 0 {
		v.Gateways = 3
	}
	if v.Roll == RollReplicas {
		v.Gateways = 1 // in this process
	}
	if v.Replicas == 0 {
		v.Replicas = 3
	}
	if v.Sessions == 0 {
		v.Sessions = 12
	}
	or(&v.Duration, 12*time.Second)
	if v.Rate == 0 {
		v.Rate = 15
	}
	or(&v.Median, 300*time.Millisecond)
	if v.Sigma == 0 {
		v.Sigma = 1
	}
	or(&v.Cap, 3*time.Second)
	switch {
	case v.MutateShare == 0:
		v.MutateShare = 0.4
	case v.MutateShare < 0:
		v.MutateShare = 0
	}
	drain := time.Second
	if v.Roll == RollGateways {
		drain = 3 * time.Second
	}
	or(&v.DrainDelay, drain)
	or(&v.Grace, 5*time.Second)
	or(&v.Downtime, time.Second)
	or(&v.RestartAt, v.Duration/4)
	if v.Attempts == 0 {
		v.Attempts = 4
	}
	or(&v.HealthInterval, 200*time.Millisecond)
	if v.Seed == 0 {
		v.Seed = 1
	}
	if v.Logger == nil {
		v.Logger = slog.New(slog.DiscardHandler)
	}
	return v
}

// protocolVersion is the version the clients ask for in era.
func protocolVersion(era string) string {
	if era == Era2025 {
		return "2025-11-25"
	}
	return "2026-07-28"
}

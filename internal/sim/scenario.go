// Package sim is the fleet lab's engine: a deterministic discrete-event
// simulator of MCP server replicas behind a load balancer (docs/SIM.md). It
// drives the gateway's own decision code on a virtual clock: routing
// (packages balance and ring), each replica's health as a gateway sees it
// (package health) and admission (package limit's Table), for one or several
// gateways in front of the fleet; no I/O, no wall clock, no goroutines in
// the core loop. Traffic is drawn first, from its own random stream, so the
// same seed gives the same calls whatever the fleet's settings, and
// differences between two runs come from the change.
package sim

import (
	"fmt"
	"math"

	"github.com/mcpfleet/mcpfleet/internal/balance"
)

// The protocol revisions and state models (Scenario.Protocol).
const (
	// Local2025 is revision 2025-11-25 with sessions held in the replica
	// that minted them.
	Local2025 = "2025-11-25-local"
	// Shared2025 is revision 2025-11-25 with sessions and stream buffers in
	// a store every replica sees.
	Shared2025 = "2025-11-25-shared"
	// Rev2026 is revision 2026-07-28: no sessions, a dropped stream is the
	// cancel of its request.
	Rev2026 = "2026-07-28"
)

// The routing modes of the load balancer (Scenario.Routing).
const (
	// RoundRobin is modelled as a random pick per attempt: a balancer that
	// keeps no state about the request.
	RoundRobin = "round-robin"
	// Affinity is plain consistent hashing of the client (and so of its
	// session): ring with no load bound.
	Affinity = "affinity"
	// Fleet is mcpfleet's own policy, computed by package balance.
	Fleet = "mcpfleet"
)

// MaxReplicas is the largest fleet the lab models.
const MaxReplicas = 12

// MaxGateways is the most gateway replicas the lab puts in front of the fleet.
const MaxGateways = 12

// The limit stores (Scenario.LimitStore).
const (
	// LocalLimits gives each gateway its own limit.Table: a caller's budget
	// is per gateway, as with the gateway's in-memory store.
	LocalLimits = "local"
	// SharedLimits gives every gateway one limit.Table, as the Redis or
	// Valkey store does: one budget per caller, whatever the gateway.
	SharedLimits = "shared"
)

// Scenario is every parameter of the model. Times are in seconds. The
// workload fields (Seed to NewToolShare) decide the traffic; the fleet fields
// (Protocol onwards) decide what the fleet does with it and never change
// the traffic drawn. Default returns the model's defaults; a zero Scenario
// is not valid.
type Scenario struct {
	// Seed selects the random streams of traffic and fleet.
	Seed uint64 `json:"seed"`
	// Clients is the number of clients; each call's client is uniform.
	Clients int `json:"clients"`
	// ArrivalRate is the Poisson rate of calls per second, all clients together.
	ArrivalRate float64 `json:"arrival_rate"`
	// TrafficSeconds is how long calls arrive; the run goes on until every
	// call is answered or given up.
	TrafficSeconds float64 `json:"traffic_s"`
	// DurationMedian and DurationSigma shape the log-normal call duration.
	DurationMedian float64 `json:"duration_median_s"`
	// DurationSigma is the log-normal's sigma (of the natural logarithm).
	DurationSigma float64 `json:"duration_sigma"`
	// DurationCap caps ordinary call durations.
	DurationCap float64 `json:"duration_cap_s"`
	// MutateShare is the share of calls that mutate state once.
	MutateShare float64 `json:"mutate_share"`
	// MutateFrom and MutateTo bound where in its run (as a fraction) a
	// call mutates, uniformly.
	MutateFrom float64 `json:"mutate_from"`
	// MutateTo is the upper bound of the mutation point.
	MutateTo float64 `json:"mutate_to"`
	// SlowTools injects slow tools: SlowShare of calls run SlowMin to
	// SlowMax seconds and emit progress every ProgressMin to ProgressMax
	// seconds (drawn per call).
	SlowTools bool `json:"slow_tools"`
	// SlowShare is the share of calls that are slow when SlowTools is on.
	SlowShare float64 `json:"slow_share"`
	// SlowMin is the shortest slow call.
	SlowMin float64 `json:"slow_min_s"`
	// SlowMax is the longest slow call.
	SlowMax float64 `json:"slow_max_s"`
	// ProgressMin is the shortest interval between a slow call's progress events.
	ProgressMin float64 `json:"progress_min_s"`
	// ProgressMax is the longest interval between a slow call's progress events.
	ProgressMax float64 `json:"progress_max_s"`
	// HotClient injects one client that adds HotFactor times its normal rate.
	HotClient bool `json:"hot_client"`
	// HotFactor is the hot client's extra rate as a multiple of a client's.
	HotFactor float64 `json:"hot_factor"`
	// Runaway injects a runaway agent: one client that adds RunawayRate
	// calls per second, drawn from a stream of its own.
	Runaway bool `json:"runaway"`
	// RunawayRate is the runaway agent's extra calls per second.
	RunawayRate float64 `json:"runaway_rate"`
	// NewTool injects a tool that the rolling deploy adds: each replica
	// serves it once it is back from its reboot with the new version, and
	// once clients know of it NewToolShare of their calls call it. Without
	// Deploy no replica ever serves it and no call does.
	NewTool bool `json:"new_tool"`
	// NewToolShare is the share of calls that call the new tool once
	// clients know of it; each call draws from a stream of its own.
	NewToolShare float64 `json:"new_tool_share"`

	// Protocol is Local2025, Shared2025 or Rev2026.
	Protocol string `json:"protocol"`
	// Routing is RoundRobin, Affinity or Fleet.
	Routing string `json:"routing"`
	// Replicas is the number of replicas, 1 to MaxReplicas.
	Replicas int `json:"replicas"`
	// Slots is each replica's execution slots; more calls wait in its FIFO queue.
	Slots int `json:"slots"`
	// IdleTimeout is the proxy's idle timeout: a stream silent for longer
	// is cut. Zero means no idle timeout.
	IdleTimeout float64 `json:"idle_timeout_s"`
	// KeepAlive is the SSE keep-alive interval; zero means off.
	KeepAlive float64 `json:"keep_alive_s"`
	// Deploy injects one rolling deploy starting at DeployAt.
	Deploy bool `json:"deploy"`
	// DeployAt is when the rolling deploy starts draining the first replica.
	DeployAt float64 `json:"deploy_at_s"`
	// DrainWindow is how long each replica drains before what still runs is killed.
	DrainWindow float64 `json:"drain_s"`
	// RebootSeconds is how long a replica is down after the kill.
	RebootSeconds float64 `json:"reboot_s"`
	// Idempotency makes mutating tools recognise a re-executed call.
	Idempotency bool `json:"idempotency"`
	// MaxReissues is how often a client sends a call again before giving up.
	MaxReissues int `json:"max_reissues"`
	// RoundTrip is the time of one exchange that runs no tool: a
	// re-initialization, a reconnect, the pause before a re-issue.
	RoundTrip float64 `json:"round_trip_s"`
	// HashEpsilon is mcpfleet's load bound (balance.Input.Epsilon); the
	// default is the gateway's, balance.DefaultEpsilon.
	HashEpsilon float64 `json:"mcpfleet_epsilon"`
	// HashMinLoad is mcpfleet's floor under the bound
	// (balance.Input.MinLoad); the default is balance.DefaultMinLoad.
	HashMinLoad int `json:"mcpfleet_min_load"`
	// Gateways is the number of gateway (balancer) replicas in front of the
	// fleet, 1 to MaxGateways; each request goes to one at random. Each
	// has its own health view, in-flight counts and, with LocalLimits,
	// limits.
	Gateways int `json:"gateways"`
	// LimitStore is LocalLimits or SharedLimits.
	LimitStore string `json:"limit_store"`
	// LimitRate is each caller's calls per second (token bucket refill);
	// zero means no rate limit.
	LimitRate float64 `json:"limit_rate"`
	// LimitBurst is each caller's bucket size; zero means the rate rounded
	// up, at least 1, as the gateway's limiter does.
	LimitBurst int `json:"limit_burst"`
	// LimitConcurrency is each caller's calls in flight; zero means no limit.
	LimitConcurrency int `json:"limit_concurrency"`
	// MaxInflight is each replica's max_inflight under mcpfleet routing:
	// calls in flight at it, counted by every gateway sharing the limit
	// store (SharedLimits) or by each gateway on its own (LocalLimits);
	// zero means no cap.
	MaxInflight int `json:"max_inflight"`
	// QueueTimeout is how long a call that finds every replica at its cap
	// waits at its gateway for a place before the 503; zero means none.
	QueueTimeout float64 `json:"queue_timeout_s"`
	// ToolsRefresh is the gateway's tools.refresh under mcpfleet routing:
	// every gateway lists every replica's tools this often, and a replica
	// as soon as its health brings it back; a tools/call goes only among
	// the replicas known to declare its tool (tools.Declares). Zero turns
	// the tool watcher, and so tool-aware routing, off; otherwise 1 to
	// 86400, as the gateway's.
	ToolsRefresh float64 `json:"tools_refresh_s"`
}

// Default returns the model's defaults (docs/SIM.md): 24 clients, 3 calls
// per second, ten minutes, three replicas of ten slots, 2025-11-25 local
// sessions with affinity, a 60 s proxy idle timeout, keep-alive off, no
// injections.
func Default() Scenario {
	return Scenario{
		Seed:           1,
		Clients:        24,
		ArrivalRate:    3,
		TrafficSeconds: 600,
		DurationMedian: 1.2,
		DurationSigma:  1.0,
		DurationCap:    30,
		MutateShare:    0.4,
		MutateFrom:     0.2,
		MutateTo:       0.8,
		SlowShare:      0.02,
		SlowMin:        60,
		SlowMax:        240,
		ProgressMin:    45,
		ProgressMax:    90,
		HotFactor:      10,
		RunawayRate:    20,
		NewToolShare:   0.3,
		Protocol:       Local2025,
		Routing:        Affinity,
		Replicas:       3,
		Slots:          10,
		IdleTimeout:    60,
		DeployAt:       120,
		DrainWindow:    30,
		RebootSeconds:  15,
		MaxReissues:    3,
		RoundTrip:      0.05,
		HashEpsilon:    balance.DefaultEpsilon,
		HashMinLoad:    balance.DefaultMinLoad,
		Gateways:       1,
		LimitStore:     LocalLimits,
		ToolsRefresh:   30,
	}
}

// Validate reports the first unusable field, by its JSON name.
func (s *Scenario) Validate() error {
	if err := s.validateModes(); err != nil {
		return err
	}
	if err := s.validateRanges(); err != nil {
		return err
	}
	if calls := s.TotalRate() * s.TrafficSeconds; calls > 20_000_000 {
		return fmt.Errorf("scenario: traffic_s %g at arrival_rate %g is about %.0f calls, over the limit of 20 million", s.TrafficSeconds, s.ArrivalRate, calls)
	}
	return nil
}

// validateModes checks the protocol and routing names.
func (s *Scenario) validateModes() error {
	switch s.Protocol {
	case Local2025, Shared2025, Rev2026:
	default:
		return fmt.Errorf("scenario: protocol %q: want %s, %s or %s", s.Protocol, Local2025, Shared2025, Rev2026)
	}
	switch s.Routing {
	case RoundRobin, Affinity, Fleet:
	default:
		return fmt.Errorf("scenario: routing %q: want %s, %s or %s", s.Routing, RoundRobin, Affinity, Fleet)
	}
	switch s.LimitStore {
	case LocalLimits, SharedLimits:
	default:
		return fmt.Errorf("scenario: limit_store %q: want %s or %s", s.LimitStore, LocalLimits, SharedLimits)
	}
	return nil
}

// validateRanges checks every number against its range.
func (s *Scenario) validateRanges() error {
	ints := []struct {
		name      string
		v, lo, hi int
	}{
		{"clients", s.Clients, 1, 100_000},
		{"replicas", s.Replicas, 1, MaxReplicas},
		{"slots", s.Slots, 1, 10_000},
		{"max_reissues", s.MaxReissues, 0, 100},
		{"mcpfleet_min_load", s.HashMinLoad, 0, 1_000_000},
		{"gateways", s.Gateways, 1, MaxGateways},
		{"limit_burst", s.LimitBurst, 0, 1_000_000},
		{"limit_concurrency", s.LimitConcurrency, 0, 1_000_000},
		{"max_inflight", s.MaxInflight, 0, 100_000},
	}
	for _, f := range ints {
		if f.v < f.lo || f.v > f.hi {
			return fmt.Errorf("scenario: %s %d out of range [%d, %d]", f.name, f.v, f.lo, f.hi)
		}
	}
	floats := []struct {
		name      string
		v, lo, hi float64
	}{
		{"arrival_rate", s.ArrivalRate, 1e-6, 100_000},
		{"traffic_s", s.TrafficSeconds, 1e-3, 1e8},
		{"duration_median_s", s.DurationMedian, 1e-6, 1e6},
		{"duration_sigma", s.DurationSigma, 0, 10},
		{"duration_cap_s", s.DurationCap, 1e-6, 1e6},
		{"mutate_share", s.MutateShare, 0, 1},
		{"mutate_from", s.MutateFrom, 0, 1},
		{"mutate_to", s.MutateTo, s.MutateFrom, 1},
		{"slow_share", s.SlowShare, 0, 1},
		{"slow_min_s", s.SlowMin, 1e-6, 1e6},
		{"slow_max_s", s.SlowMax, s.SlowMin, 1e6},
		{"progress_min_s", s.ProgressMin, 0, 1e6},
		{"progress_max_s", s.ProgressMax, s.ProgressMin, 1e6},
		{"hot_factor", s.HotFactor, 0, 100_000},
		{"runaway_rate", s.RunawayRate, 0, 100_000},
		{"new_tool_share", s.NewToolShare, 0, 1},
		{"idle_timeout_s", s.IdleTimeout, 0, 1e6},
		{"keep_alive_s", s.KeepAlive, 0, 1e6},
		{"deploy_at_s", s.DeployAt, 0, 1e8},
		{"drain_s", s.DrainWindow, 0, 1e6},
		{"reboot_s", s.RebootSeconds, 0, 1e6},
		{"round_trip_s", s.RoundTrip, 0, 60},
		{"mcpfleet_epsilon", s.HashEpsilon, 0, 100},
		{"limit_rate", s.LimitRate, 0, 100_000},
		{"queue_timeout_s", s.QueueTimeout, 0, 300},
	}
	for _, f := range floats {
		if math.IsNaN(f.v) || f.v < f.lo || f.v > f.hi {
			return fmt.Errorf("scenario: %s %g out of range [%g, %g]", f.name, f.v, f.lo, f.hi)
		}
	}
	if r := s.ToolsRefresh; math.IsNaN(r) || r != 0 && (r < 1 || r > maxToolsRefresh) {
		return fmt.Errorf("scenario: tools_refresh_s %g: want 0 (off) or 1 to %d, as the gateway's tools.refresh", r, maxToolsRefresh)
	}
	return nil
}

// maxToolsRefresh is the gateway's longest tools.refresh (24 h), in seconds.
const maxToolsRefresh = 86400

// hotShare is the hot client's extra rate as a share of the total rate.
func (s *Scenario) hotShare() float64 {
	if !s.HotClient {
		return 0
	}
	return s.HotFactor / float64(s.Clients)
}

// TotalRate is the calls per second of the traffic, every injection
// included.
func (s *Scenario) TotalRate() float64 {
	rate := s.ArrivalRate * (1 + s.hotShare())
	if s.Runaway {
		rate += s.RunawayRate
	}
	return rate
}

// idleCuts reports whether a stream can be cut at all: there is an idle
// timeout and no keep-alive often enough to beat it (a keep-alive resets
// the idle timer; a silence of exactly the timeout is not longer than it).
func (s *Scenario) idleCuts() bool {
	return s.IdleTimeout > 0 && (s.KeepAlive == 0 || s.KeepAlive > s.IdleTimeout)
}

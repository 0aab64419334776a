// Package admin is the gateway's fleet view on the admin listener: the
// snapshot GET /api/fleet serves (Fleet), the page at / that draws it, the
// drain and resume actions, the bearer token that guards them, and the
// merged table of several gateways' views that `mcpfleet fleet` prints
// (docs/ADMIN.md). It knows nothing of the gateway: a Source gives it the
// snapshot and takes the actions.
package admin

import (
	"time"

	"github.com/mcpfleet/mcpfleet/internal/version"
)

// The replica states of Replica.State.
const (
	// StateUp: the replica takes new work.
	StateUp = "up"
	// StateDown: its checks (or connections) failed; it takes no new work.
	StateDown = "down"
	// StateDraining: it said it is draining, or an operator drained it by
	// hand (Replica.Held); its sessions and calls in flight go on.
	StateDraining = "draining"
	// StateChecking: it is down and its checks have begun to pass again,
	// not yet enough of them in a row to bring it back.
	StateChecking = "checking"
	// StateQuarantined: its tools break the lock (tools.on_unlocked:
	// quarantine); it takes no new work and its sessions are told they are
	// gone, until its tools match again.
	StateQuarantined = "quarantined"
)

// Fleet is one gateway's view of its fleet at one moment. Its JSON is the
// schema fleet.schema.json describes; docs/ADMIN.md gives every field.
type Fleet struct {
	// At is when the snapshot was taken.
	At       time.Time `json:"at"`
	Gateway  Gateway   `json:"gateway"`
	Replicas []Replica `json:"replicas"`
}

// Gateway is the gateway's own figures.
type Gateway struct {
	// Version is the build in one line: its version and commit
	// (version.Info.Short).
	Version string `json:"version"`
	// Build is the build's identity field by field, as mcpfleet version
	// prints it; nil from a gateway older than the field.
	Build *version.Info `json:"build,omitempty"`
	// Started is when the gateway started; Uptime the seconds since.
	Started  time.Time `json:"started"`
	Uptime   float64   `json:"uptime_s"`
	Draining bool      `json:"draining"`
	Stores   []Store   `json:"stores"`
	Limits   Limits    `json:"limits"`
	Authz    *Authz    `json:"authz,omitempty"`
	Cache    Cache     `json:"cache"`
	FailOpen FailOpen  `json:"fail_open"`
}

// Store is one piece of shared state and where it lives.
type Store struct {
	// Name is what it keeps: idempotency, tasks, limits, cache, resume.
	Name string `json:"name"`
	// Kind is memory or redis.
	Kind string `json:"kind"`
	// Healthy says the store answered its last check (memory always
	// does); Error says why not, without any credential.
	Healthy bool   `json:"healthy"`
	Error   string `json:"error,omitempty"`
}

// Limits counts the admission decisions since start, by reason.
type Limits struct {
	// Admitted is by reason: none (under every limit), fail_open (let
	// through while the store did not answer).
	Admitted map[string]uint64 `json:"admitted"`
	// Refused is by reason: rate, concurrency, tool, store.
	Refused map[string]uint64 `json:"refused"`
}

// Authz counts the authorization decisions since start, by the rule that
// made them (default when none matched); nil when authorization is off.
type Authz struct {
	Allowed map[string]uint64 `json:"allowed"`
	Denied  map[string]uint64 `json:"denied"`
}

// Cache counts the cacheable requests since start.
type Cache struct {
	Hits   uint64 `json:"hits"`
	Misses uint64 `json:"misses"`
	Bypass uint64 `json:"bypass"`
	Errors uint64 `json:"errors"`
}

// FailOpen counts what went on without a store that did not answer.
type FailOpen struct {
	// Limits: calls let through without an admission decision.
	Limits uint64 `json:"limits"`
	// Idempotency: calls run without deduplication.
	Idempotency uint64 `json:"idempotency"`
}

// Replica is one replica as this gateway sees it.
type Replica struct {
	Name  string `json:"name"`
	URL   string `json:"url"`
	State string `json:"state"`
	// Held says an operator drained the replica by hand on this gateway
	// (POST /api/replicas/{name}/drain); State is then draining.
	Held bool `json:"held"`
	// Health is the state its checks alone give (up, down, draining,
	// checking), whatever Held says.
	Health   string `json:"health"`
	InFlight int64  `json:"inflight"`
	// Sessions estimates its 2025-11-25 sessions with a request through
	// this gateway in the last 5 to 10 minutes.
	Sessions int `json:"sessions"`
	// Streams is the SSE streams relayed from it now.
	Streams  int64  `json:"streams"`
	Requests uint64 `json:"requests"`
	Errors   uint64 `json:"errors"`
	Retries  uint64 `json:"retries"`
	// LatencyP50 and LatencyP99 are over the answers of the last minute,
	// in milliseconds; 0 with none.
	LatencyP50 float64    `json:"latency_p50_ms"`
	LatencyP99 float64    `json:"latency_p99_ms"`
	LastCheck  *LastCheck `json:"last_check"`
	// Checks are its last active health checks, newest first, at most
	// 10: the page's detail of the replica.
	Checks []LastCheck `json:"checks"`
	// RecentErrors are its last failures, newest first, at most 10.
	RecentErrors []Failure `json:"recent_errors"`
	// Stderr is the last lines a replica that is a child process wrote
	// to its standard error, oldest first; nil (and absent from the JSON)
	// for a replica reached over HTTP.
	Stderr []string `json:"stderr,omitempty"`
	// Process is the child process a stdio replica runs as; nil (and
	// absent from the JSON) for a replica reached over HTTP.
	Process *Process `json:"process,omitempty"`
}

// Process is a stdio replica's child process.
type Process struct {
	// PID is its process ID (its process group's too); 0 while it is not
	// running (starting again after it exited).
	PID int `json:"pid"`
	// Started is when its current run started; absent while not running.
	Started *time.Time `json:"started,omitempty"`
	// UptimeSeconds is how long its current run has been up.
	UptimeSeconds float64 `json:"uptime_seconds"`
	// Restarts counts its runs after the first.
	Restarts int `json:"restarts"`
	// Sessions is the client sessions on it now (through this gateway),
	// with those on a child of their own (session_children).
	Sessions int `json:"sessions"`
	// SessionChildren are the children of the replica's sessions when its
	// upstream runs one child per session (per_session); absent otherwise.
	SessionChildren []SessionChild `json:"session_children,omitempty"`
	// StatelessChild is the replica's stateless twin, the second process
	// that serves its 2026-07-28 requests (native_stateless); absent
	// before the replica's first such request, and without one.
	StatelessChild *StatelessChild `json:"stateless_child,omitempty"`
}

// StatelessChild is a stdio replica's stateless twin.
type StatelessChild struct {
	SessionChild
	// Restarts counts its runs after the first.
	Restarts int `json:"restarts"`
	// State is probing (its server/discover is not answered yet), native
	// (it serves the replica's 2026-07-28 requests) or refused (the server
	// does not speak 2026-07-28: it stopped for good, and those requests
	// are translated on the replica's child).
	State string `json:"state"`
}

// SessionChild is the child process of one client session (per_session).
type SessionChild struct {
	// Name is the child's name, what {child} stood for in its environment.
	Name string `json:"name"`
	// PID is its process ID; 0 while it starts or after it exited.
	PID int `json:"pid"`
	// UptimeSeconds is how long it has been up.
	UptimeSeconds float64 `json:"uptime_seconds"`
	// Stderr is the last lines it wrote to its standard error, oldest
	// first, at most 20.
	Stderr []string `json:"stderr,omitempty"`
}

// Failure is one request a replica failed, as the gateway saw it.
type Failure struct {
	At time.Time `json:"at"`
	// Outcome is upstream_error (a 5xx answer), upstream_cut (a stream
	// it cut) or connect_failed (the request never reached it), as in
	// the access log.
	Outcome string `json:"outcome"`
	// Method is the request's JSON-RPC method; "" when not known.
	Method string `json:"method,omitempty"`
	// Status is the replica's HTTP status; 0 when it gave none.
	Status int `json:"status,omitempty"`
}

// LastCheck is a replica's last active health check; null before the
// first, or when no checks run.
type LastCheck struct {
	At time.Time `json:"at"`
	// Result is ok, fail or draining.
	Result string `json:"result"`
	Reason string `json:"reason,omitempty"`
}

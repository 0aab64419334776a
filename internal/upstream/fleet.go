// Package upstream holds the fleet: its replicas, their in-flight counts and
// health, immutable snapshots of membership that pickers read without locks,
// and what keeps them current: health checks (checker.go), passive reports
// from the forwarding path (passive.go), membership updates (update.go) and
// DNS discovery (discover.go).
package upstream

import (
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
)

// Spec describes one replica as configuration gives it.
type Spec struct {
	// Name identifies the replica in metrics and logs; "" means the URL's
	// host:port.
	Name string
	// URL is the replica's MCP endpoint, e.g. http://10.0.0.5:8080/mcp.
	URL string
	// SSEURL is the replica's SSE endpoint of the 2024-11-05 HTTP+SSE
	// transport; "" means URL's scheme and host with the path /sse.
	SSEURL string
}

// Replica is one MCP server of the fleet. Its counters are atomics: every
// request touches them. Health transitions take mu; reads of the state do
// not.
type Replica struct {
	name     string
	url      *url.URL
	sseURL   *url.URL // the 2024-11-05 SSE endpoint
	inFlight atomic.Int64

	// state mirrors status.State for lock-free reads; written under mu.
	state atomic.Int32
	// suspect is set while the replica is up with a failure streak, so
	// ReportSuccess can skip the lock on the common path; written under mu.
	suspect atomic.Bool
	// policy points at the owning fleet's running checker policy (nil
	// inside when no checker runs).
	policy *atomic.Pointer[policy]
	// noHealthPath is set once the replica answered its health path 404:
	// it has none, and checks go to its MCP endpoint (or by connection in
	// mode http) instead.
	noHealthPath atomic.Bool
	// mcpProven is set while the replica's MCP endpoint stands proven
	// (prove.go): from a check that proved it to the next check that
	// failed. lastProbe is the health.Probe that proved it last.
	mcpProven atomic.Bool
	lastProbe atomic.Int32
	// loggedReason is the reason of the last health line logged for the
	// replica; guarded by mu.
	loggedReason string
	// proven is set once an active check of the replica passed; until
	// then one check decides its state (checkOne).
	proven atomic.Bool

	mu sync.Mutex // guards status and orders OnChange calls
	// status is the replica's state and current streak.
	status Status

	stats stats // the fleet view's figures (stats.go)
}

// Name returns the replica's name.
func (r *Replica) Name() string { return r.name }

// URL returns the replica's endpoint. The caller must not modify it.
func (r *Replica) URL() *url.URL { return r.url }

// SSEURL returns the replica's 2024-11-05 SSE endpoint. The caller must
// not modify it.
func (r *Replica) SSEURL() *url.URL { return r.sseURL }

// InFlight returns the number of requests being forwarded to the replica.
func (r *Replica) InFlight() int64 { return r.inFlight.Load() }

// Acquire counts one more request in flight; Release counts it out.
func (r *Replica) Acquire() { r.inFlight.Add(1) }

// Release counts a request out; see Acquire.
func (r *Replica) Release() { r.inFlight.Add(-1) }

// Snapshot is an immutable view of the fleet's membership. Pickers read it
// without locks; a membership change swaps in a new one.
type Snapshot struct {
	replicas []*Replica
	byName   map[string]int
}

// Len returns the number of replicas.
func (s *Snapshot) Len() int { return len(s.replicas) }

// At returns the i-th replica.
func (s *Snapshot) At(i int) *Replica { return s.replicas[i] }

// InFlight returns the i-th replica's in-flight count.
func (s *Snapshot) InFlight(i int) int64 { return s.replicas[i].InFlight() }

// Eligible reports whether the i-th replica may take new work: only when it
// is up, not drained by hand (SetHeld) and not quarantined
// (SetQuarantined). Down and draining replicas take none; requests pinned
// to a draining replica by their session are routed without asking.
func (s *Snapshot) Eligible(i int) bool {
	r := s.replicas[i]
	return r.State() == StateUp && !r.stats.held.Load() && !r.stats.quarantined.Load()
}

// Lookup returns the replica named name, or nil.
func (s *Snapshot) Lookup(name string) *Replica {
	if i, ok := s.byName[name]; ok {
		return s.replicas[i]
	}
	return nil
}

// Fleet is the set of replicas the gateway routes to. Its membership may
// change (Update); each change swaps in a new Snapshot.
type Fleet struct {
	snap atomic.Pointer[Snapshot]
	// policy is the running Checker's, lent to passive reports; nil when
	// no checker runs.
	policy atomic.Pointer[policy]

	mu sync.Mutex // serializes Update's read, build and swap of snap
}

// New returns a fleet of the given replicas, all up. Names must be unique
// and URLs absolute http or https URLs.
func New(specs []Spec) (*Fleet, error) {
	f := &Fleet{}
	s, _, err := f.build(specs, nil)
	if err != nil {
		return nil, err
	}
	f.snap.Store(s)
	return f, nil
}

// Snapshot returns the current membership.
func (f *Fleet) Snapshot() *Snapshot { return f.snap.Load() }

// build returns a snapshot of specs. A replica of old whose name and URL
// are unchanged is carried over, with its in-flight count and health; the
// others are new, and up. The Change lists names that join and leave.
func (f *Fleet) build(specs []Spec, old *Snapshot) (*Snapshot, Change, error) {
	var ch Change
	if len(specs) == 0 {
		return nil, ch, fmt.Errorf("building fleet: no upstreams")
	}
	s := &Snapshot{byName: make(map[string]int, len(specs))}
	for i, sp := range specs {
		u, err := ParseURL(sp.URL)
		if err != nil {
			return nil, Change{}, fmt.Errorf("building fleet: upstream %d: %w", i, err)
		}
		sse, err := sseURLOf(sp, u)
		if err != nil {
			return nil, Change{}, fmt.Errorf("building fleet: upstream %d: sse url: %w", i, err)
		}
		name := sp.Name
		if name == "" {
			name = u.Host
		}
		if _, dup := s.byName[name]; dup {
			return nil, Change{}, fmt.Errorf("building fleet: upstream %d: duplicate name %q", i, name)
		}
		r := old.lookup(name)
		if r == nil || r.url.String() != u.String() || r.sseURL.String() != sse.String() {
			r = &Replica{name: name, url: u, sseURL: sse, policy: &f.policy}
			ch.Added = append(ch.Added, name)
		}
		s.byName[name] = len(s.replicas)
		s.replicas = append(s.replicas, r)
	}
	for _, r := range old.all() {
		if s.Lookup(r.name) != r {
			ch.Removed = append(ch.Removed, r.name)
		}
	}
	return s, ch, nil
}

// DefaultSSEPath is the path of a replica's 2024-11-05 SSE endpoint when
// its Spec names none.
const DefaultSSEPath = "/sse"

// sseURLOf returns the SSE endpoint of sp, whose MCP endpoint is u.
func sseURLOf(sp Spec, u *url.URL) (*url.URL, error) {
	if sp.SSEURL != "" {
		return ParseURL(sp.SSEURL)
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host, Path: DefaultSSEPath}, nil
}

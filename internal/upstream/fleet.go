// Package upstream holds the fleet: its replicas, their in-flight counts,
// and immutable snapshots of membership that pickers read without locks.
package upstream

import (
	"fmt"
	"net/url"
	"sync/atomic"
)

// Spec describes one replica as configuration gives it.
type Spec struct {
	// Name identifies the replica in metrics and logs; "" means the URL's
	// host:port.
	Name string
	// URL is the replica's MCP endpoint, e.g. http://10.0.0.5:8080/mcp.
	URL string
}

// Replica is one MCP server of the fleet. Its counters are atomics: every
// request touches them.
type Replica struct {
	name     string
	url      *url.URL
	inFlight atomic.Int64
}

// Name returns the replica's name.
func (r *Replica) Name() string { return r.name }

// URL returns the replica's endpoint. The caller must not modify it.
func (r *Replica) URL() *url.URL { return r.url }

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

// Eligible reports whether the i-th replica may take new work. Every member
// may until health checks say otherwise.
func (s *Snapshot) Eligible(i int) bool { return true }

// Lookup returns the replica named name, or nil.
func (s *Snapshot) Lookup(name string) *Replica {
	if i, ok := s.byName[name]; ok {
		return s.replicas[i]
	}
	return nil
}

// Fleet is the set of replicas the gateway routes to.
type Fleet struct {
	snap atomic.Pointer[Snapshot]
}

// New returns a fleet of the given replicas. Names must be unique and URLs
// absolute http or https URLs.
func New(specs []Spec) (*Fleet, error) {
	s, err := build(specs)
	if err != nil {
		return nil, err
	}
	f := &Fleet{}
	f.snap.Store(s)
	return f, nil
}

// Snapshot returns the current membership.
func (f *Fleet) Snapshot() *Snapshot { return f.snap.Load() }

func build(specs []Spec) (*Snapshot, error) {
	if len(specs) == 0 {
		return nil, fmt.Errorf("building fleet: no upstreams")
	}
	s := &Snapshot{byName: make(map[string]int, len(specs))}
	for i, sp := range specs {
		u, err := ParseURL(sp.URL)
		if err != nil {
			return nil, fmt.Errorf("building fleet: upstream %d: %w", i, err)
		}
		name := sp.Name
		if name == "" {
			name = u.Host
		}
		if _, dup := s.byName[name]; dup {
			return nil, fmt.Errorf("building fleet: upstream %d: duplicate name %q", i, name)
		}
		s.byName[name] = len(s.replicas)
		s.replicas = append(s.replicas, &Replica{name: name, url: u})
	}
	return s, nil
}

// ParseURL checks that raw is an absolute http(s) URL with a host and no
// credentials, query or fragment, and returns it parsed.
func ParseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("parsing url: %w", err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("url %q: scheme must be http or https", raw)
	case u.Host == "":
		return nil, fmt.Errorf("url %q: no host", raw)
	case u.User != nil:
		return nil, fmt.Errorf("url: credentials in a url are not allowed")
	case u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("url %q: no query or fragment allowed", raw)
	}
	if u.Path == "" {
		u.Path = "/"
	}
	return u, nil
}

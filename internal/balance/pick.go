// Package balance picks a replica for new work from a snapshot of the fleet.
// It is pure: no I/O, no clock; the counter and random number come in as
// arguments, so the gateway and the simulator run the same decisions.
package balance

import (
	"fmt"

	"github.com/mcpfleet/mcpfleet/internal/ring"
)

// View is what picking needs to know of the fleet. upstream.Snapshot
// implements it; so does the simulator's fleet.
type View interface {
	Len() int
	InFlight(i int) int64
	Eligible(i int) bool
}

// Policy is how new work spreads over the fleet.
type Policy uint8

// The policies.
const (
	// Hash picks by consistent hashing of the caller's routing key with
	// bounded loads: the same caller keeps its replica while that replica
	// is not over (1+epsilon) times the average load (the zero value).
	Hash Policy = iota
	// LeastInFlight picks the eligible replica with the fewest requests in
	// flight, breaking ties at random.
	LeastInFlight
	// RoundRobin picks eligible replicas in turn.
	RoundRobin
)

// ParsePolicy reads a policy name as configuration spells it.
func ParsePolicy(s string) (Policy, error) {
	switch s {
	case "hash", "":
		return Hash, nil
	case "least-inflight":
		return LeastInFlight, nil
	case "round-robin":
		return RoundRobin, nil
	}
	return 0, fmt.Errorf("unknown balance policy %q (want hash, least-inflight or round-robin)", s)
}

// String returns the policy's configuration name.
func (p Policy) String() string {
	switch p {
	case RoundRobin:
		return "round-robin"
	case LeastInFlight:
		return "least-inflight"
	}
	return "hash"
}

// The hash policy's default load bound, shared by the gateway's options
// and the simulator: a replica with more than (1+DefaultEpsilon) times the
// average in flight passes new work on, unless it has fewer than
// DefaultMinLoad in flight (Mirrokni, Thorup and Zadimoghaddam, "Consistent
// Hashing with Bounded Loads").
const (
	// DefaultEpsilon is Input.Epsilon's default.
	DefaultEpsilon = 0.25
	// DefaultMinLoad is Input.MinLoad's default.
	DefaultMinLoad = 10
)

// Input is what a pick depends on besides the fleet: all of it comes from
// the caller, so picking stays pure.
type Input struct {
	Seq     uint64     // a counter the caller advances per pick (round-robin)
	Rnd     uint64     // a random number (least-inflight tie-breaking)
	Key     uint64     // the caller's routing key (hash)
	Ring    *ring.Ring // the ring over the View's members, in the same order (hash)
	Epsilon float64    // the load bound of hash; <= 0 turns it off
	// MinLoad is the floor under the bound: a replica with fewer requests
	// in flight keeps its callers whatever the average.
	MinLoad int64
}

// Pick returns the index of the replica to take new work, or -1 when no
// eligible replica is left. Indices in skip are never picked: they are
// replicas this request already failed to reach. Hash without a ring falls
// back to least-inflight.
func Pick(p Policy, v View, in Input, skip []int) int {
	n := v.Len()
	if n == 0 {
		return -1
	}
	seq, rnd := in.Seq, in.Rnd
	if p == Hash && in.Ring != nil && in.Ring.Len() == n {
		return in.Ring.PickFloor(in.Key, v, in.Epsilon, in.MinLoad, skip)
	}
	if p == RoundRobin {
		start := int(seq % uint64(n))
		for k := range n {
			if i := (start + k) % n; usable(v, i, skip) {
				return i
			}
		}
		return -1
	}
	best, bestLoad := -1, int64(0)
	start := int(rnd % uint64(n))
	for k := range n {
		i := (start + k) % n
		if !usable(v, i, skip) {
			continue
		}
		if load := v.InFlight(i); best < 0 || load < bestLoad {
			best, bestLoad = i, load
		}
	}
	return best
}

func usable(v View, i int, skip []int) bool {
	if !v.Eligible(i) {
		return false
	}
	for _, s := range skip {
		if s == i {
			return false
		}
	}
	return true
}

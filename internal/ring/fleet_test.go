package ring

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"testing"
)

// fleet is a fake Loads: load[i] in flight; eligible nil means all are.
type fleet struct {
	load     []int64
	eligible []bool
}

var _ Loads = fleet{}

func (f fleet) Len() int             { return len(f.load) }
func (f fleet) InFlight(i int) int64 { return f.load[i] }
func (f fleet) Eligible(i int) bool  { return f.eligible == nil || f.eligible[i] }

// idle returns a fleet of n eligible members with nothing in flight.
func idle(n int) fleet { return fleet{load: make([]int64, n)} }

// testKeys derives n keys the way the gateway does, from a keyed hash of
// an identity: the first 8 bytes of sha256("identity-i").
func testKeys(n int) []uint64 { return identityKeys("identity", n) }

// identityKeys derives n keys from sha256(prefix + "-i").
func identityKeys(prefix string, n int) []uint64 {
	keys := make([]uint64, n)
	for i := range keys {
		sum := sha256.Sum256(fmt.Appendf(nil, "%s-%d", prefix, i))
		keys[i] = binary.BigEndian.Uint64(sum[:8])
	}
	return keys
}

// memberNames returns n names in the form the fleet gives replicas.
func memberNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("replica-%d", i)
	}
	return names
}

// mustNew builds a ring or fails the test.
func mustNew(tb testing.TB, names []string, opts *Options) *Ring {
	tb.Helper()
	r, err := New(names, opts)
	if err != nil {
		tb.Fatalf("New(%q): %v", names, err)
	}
	return r
}

// assign maps every key to its member's name with the bound off.
func assign(r *Ring, keys []uint64) []string {
	f := idle(r.Len())
	out := make([]string, len(keys))
	for k, key := range keys {
		if i := r.Pick(key, f, 0, nil); i >= 0 {
			out[k] = r.Name(i)
		}
	}
	return out
}

// spread returns the largest member's key count over the mean.
func spread(r *Ring, keys []uint64) float64 {
	counts := make(map[string]int, r.Len())
	for _, name := range assign(r, keys) {
		counts[name]++
	}
	most := 0
	for _, c := range counts {
		most = max(most, c)
	}
	return float64(most) * float64(r.Len()) / float64(len(keys))
}

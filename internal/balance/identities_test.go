package balance

import (
	"fmt"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/identity"
	"github.com/mcpfleet/mcpfleet/internal/ring"
)

// TestTenThousandIdentities holds the affinity figures for real routing
// keys (HMACs of normalised bearer tokens) through Pick: removing one of
// three replicas moves at most 40% of identities, adding a fourth at most
// 30%, and the spread (identities per replica, max over mean) is at most
// 1.15.
func TestTenThousandIdentities(t *testing.T) {
	keyer, err := identity.NewKeyer([]byte("a-salt-of-at-least-16-bytes"))
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]uint64, 10_000)
	for i := range keys {
		id, ok := identity.FromCredential(fmt.Sprintf("Bearer user-token-%d", i), "")
		if !ok {
			t.Fatal("no identity")
		}
		keys[i] = keyer.Key(id)
	}
	assign := func(names []string) map[int]string {
		r, err := ring.New(names, nil)
		if err != nil {
			t.Fatal(err)
		}
		idle := fleet{load: make([]int64, len(names))}
		out := make(map[int]string, len(keys))
		for i, k := range keys {
			out[i] = names[Pick(Hash, idle, Input{Key: k, Ring: r, Epsilon: 0.25}, nil)]
		}
		return out
	}
	moved := func(a, b map[int]string) float64 {
		n := 0
		for i := range a {
			if a[i] != b[i] {
				n++
			}
		}
		return float64(n) / float64(len(a))
	}
	three := assign([]string{"replica-a", "replica-b", "replica-c"})
	per := map[string]int{}
	for _, r := range three {
		per[r]++
	}
	maxN := 0
	for _, n := range per {
		maxN = max(maxN, n)
	}
	spread := float64(maxN) / (float64(len(keys)) / 3)
	removed := moved(three, assign([]string{"replica-a", "replica-c"}))
	added := moved(three, assign([]string{"replica-a", "replica-b", "replica-c", "replica-d"}))
	t.Logf("10,000 identities on 3 replicas: %v; spread max/mean %.3f; remove one: %.1f%% moved; add a fourth: %.1f%% moved",
		per, spread, 100*removed, 100*added)
	if spread > 1.15 {
		t.Errorf("spread %.3f > 1.15", spread)
	}
	if removed > 0.40 {
		t.Errorf("removing a replica moved %.1f%% > 40%%", 100*removed)
	}
	if added > 0.30 {
		t.Errorf("adding a replica moved %.1f%% > 30%%", 100*added)
	}
}

package ring

import (
	"fmt"
	"slices"
	"testing"
)

// TestRemoveMovesOnlyRemovedKeys: removing a member moves its keys and no
// others.
func TestRemoveMovesOnlyRemovedKeys(t *testing.T) {
	keys := testKeys(10_000)
	names := memberNames(3)
	before := assign(mustNew(t, names, nil), keys)
	for gone := range names {
		t.Run(names[gone], func(t *testing.T) {
			rest := slices.Delete(slices.Clone(names), gone, gone+1)
			after := assign(mustNew(t, rest, nil), keys)
			moved := 0
			for k := range keys {
				switch {
				case before[k] == names[gone]:
					moved++
				case after[k] != before[k]:
					t.Fatalf("key %d moved from %s to %s, though %s stayed", k, before[k], after[k], before[k])
				}
			}
			pct := 100 * float64(moved) / float64(len(keys))
			t.Logf("removing %s of 3 moved %.2f%% of keys (ideal 33.33%%)", names[gone], pct)
			if pct > 40 {
				t.Errorf("moved %.2f%% of keys, want at most 40%%", pct)
			}
		})
	}
}

// TestAddMovesKeysOnlyToNewMember: adding a member moves keys to it and
// nowhere else.
func TestAddMovesKeysOnlyToNewMember(t *testing.T) {
	keys := testKeys(10_000)
	names := memberNames(4)
	before := assign(mustNew(t, names[:3], nil), keys)
	after := assign(mustNew(t, names, nil), keys)
	moved := 0
	for k := range keys {
		if after[k] == before[k] {
			continue
		}
		if after[k] != names[3] {
			t.Fatalf("key %d moved from %s to %s, not to the new member", k, before[k], after[k])
		}
		moved++
	}
	pct := 100 * float64(moved) / float64(len(keys))
	t.Logf("adding a 4th member moved %.2f%% of keys (ideal 25%%)", pct)
	if pct > 30 {
		t.Errorf("moved %.2f%% of keys, want at most 30%%", pct)
	}
}

// TestSpread: with the default vnodes, no member gets more than 15% above
// its fair share of 10,000 keys.
func TestSpread(t *testing.T) {
	keys := testKeys(10_000)
	for _, n := range []int{3, 4, 5, 12} {
		t.Run(fmt.Sprintf("members=%d", n), func(t *testing.T) {
			r := mustNew(t, memberNames(n), nil)
			got := spread(r, keys)
			t.Logf("%2d members, %d vnodes: max/mean keys %.3f, max/mean arc %.3f", n, DefaultVNodes, got, arcSpread(r))
			if got > 1.15 {
				t.Errorf("max/mean = %.3f, want at most 1.15", got)
			}
		})
	}
}

// TestVNodesSweep is the measurement behind DefaultVNodes: for each
// candidate, 100 name sets per fleet size, the median and 95th percentile of
// max/mean over 10,000 keys and over the ring's arcs (infinitely many keys),
// and the share of name sets above 1.15. Run with
// go test -run TestVNodesSweep -v ./internal/ring -args -sweep.
func TestVNodesSweep(t *testing.T) {
	if !*sweep {
		t.Skip("measurement; enable with -args -sweep")
	}
	keys := testKeys(10_000)
	for _, v := range []int{64, 128, 160, 256, 384, 512, 768, 1024} {
		for _, n := range []int{3, 4, 5, 12} {
			var byKeys, byArc []float64
			over := 0
			for set := range 100 {
				r := mustNew(t, addressNames(set, n), &Options{VNodes: v})
				byKeys, byArc = append(byKeys, spread(r, keys)), append(byArc, arcSpread(r))
				if byKeys[set] > 1.15 {
					over++
				}
			}
			slices.Sort(byKeys)
			slices.Sort(byArc)
			t.Logf("vnodes %4d members %2d: keys median %.3f p95 %.3f, over 1.15 in %3d%%; arc median %.3f p95 %.3f",
				v, n, byKeys[50], byKeys[95], over, byArc[50], byArc[95])
		}
	}
}

// addressNames returns the set-th of many distinct fleets of n members
// named as host:port.
func addressNames(set, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("10.%d.%d.%d:8080", set, i, set*7%256)
	}
	return names
}

// arcSpread returns the largest member's share of the ring over the mean:
// the spread of infinitely many uniform keys.
func arcSpread(r *Ring) float64 {
	share := make([]float64, r.Len())
	for j, h := range r.hashes {
		prev := r.hashes[(j+len(r.hashes)-1)%len(r.hashes)]
		share[r.owners[j]] += float64(h-prev) / (1 << 64)
	}
	return slices.Max(share) * float64(r.Len())
}

package ring

import (
	"fmt"
	"math"
	"testing"
)

// clockwise returns the members of a 3-member ring in clockwise order from the
// point of key, which is how the bounded-load cases below are stated.
func clockwise(r *Ring, key uint64) []int {
	var order []int
	seen := map[int]bool{}
	for k := range r.hashes {
		i := int(r.owners[(r.search(mix64(key))+k)%len(r.hashes)])
		if !seen[i] {
			seen[i] = true
			order = append(order, i)
		}
	}
	return order
}

func TestPickBoundedLoads(t *testing.T) {
	r := mustNew(t, memberNames(3), nil)
	const key = 0x5eed
	o := clockwise(r, key) // o[0] is key's home, o[1] next clockwise, o[2] last
	// loads builds a fleet from loads and eligibility in clockwise order.
	loads := func(l [3]int64, eligible ...bool) fleet {
		f := idle(3)
		if eligible != nil {
			f.eligible = make([]bool, 3)
		}
		for k, i := range o {
			f.load[i] = l[k]
			if eligible != nil {
				f.eligible[i] = eligible[k]
			}
		}
		return f
	}
	tests := []struct {
		name string
		f    fleet
		eps  float64
		skip []int // positions in clockwise order
		want int   // position in clockwise order, or -1
	}{
		{"idle goes home", loads([3]int64{0, 0, 0}), 0.25, nil, 0},
		// m = 31, c = ceil(1.25*31/3) = 13.
		{"home under capacity keeps it", loads([3]int64{12, 10, 8}), 0.25, nil, 0},
		{"home at capacity passes on", loads([3]int64{13, 10, 7}), 0.25, nil, 1},
		{"home and next at capacity pass to last", loads([3]int64{20, 20, 0}), 0.25, nil, 2},
		{"epsilon 0 is plain hashing", loads([3]int64{1000, 0, 0}), 0, nil, 0},
		{"negative epsilon is plain hashing", loads([3]int64{1000, 0, 0}), -1, nil, 0},
		{"NaN epsilon is plain hashing", loads([3]int64{1000, 0, 0}), math.NaN(), nil, 0},
		{"huge epsilon never binds", loads([3]int64{1000, 0, 0}), 1e300, nil, 0},
		{"ineligible home is skipped", loads([3]int64{0, 0, 0}, false, true, true), 0, nil, 1},
		{"ineligible home is skipped with the bound", loads([3]int64{0, 0, 0}, false, true, true), 0.25, nil, 1},
		// Only eligible members count: m = 21 over 2, c = ceil(1.25*21/2) = 14.
		{"ineligible load does not count", loads([3]int64{1000, 13, 7}, false, true, true), 0.25, nil, 1},
		{"skip list honoured", loads([3]int64{0, 0, 0}), 0.25, []int{0}, 1},
		{"skip list honoured without the bound", loads([3]int64{0, 0, 0}), 0, []int{0, 1}, 2},
		// The under-capacity member is skipped; fall back to the first
		// eligible, non-skipped member clockwise.
		{"all usable at capacity takes first eligible", loads([3]int64{0, 20, 20}), 0.25, []int{0}, 1},
		{"all usable at capacity skips ineligible", loads([3]int64{20, 20, 0}, false, true, true), 0.25, []int{2}, 1},
		{"no eligible member", loads([3]int64{0, 0, 0}, false, false, false), 0.25, nil, -1},
		{"no eligible member without the bound", loads([3]int64{0, 0, 0}, false, false, false), 0, nil, -1},
		{"all skipped", loads([3]int64{0, 0, 0}), 0.25, []int{0, 1, 2}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var skip []int
			for _, k := range tt.skip {
				skip = append(skip, o[k])
			}
			want := -1
			if tt.want >= 0 {
				want = o[tt.want]
			}
			if got := r.Pick(key, tt.f, tt.eps, skip); got != want {
				t.Errorf("Pick = %d (%s), want %d; clockwise order %v", got, name(r, got), want, o)
			}
		})
	}
}

func name(r *Ring, i int) string {
	if i < 0 {
		return "none"
	}
	return r.Name(i)
}

func TestCapacity(t *testing.T) {
	tests := []struct {
		load []int64
		eps  float64
		want uint64
	}{
		{[]int64{0, 0, 0}, 0.25, 1},                     // ceil(1.25*1/3)
		{[]int64{10, 10, 10}, 0.25, 13},                 // ceil(1.25*31/3) = ceil(12.92)
		{[]int64{5, 4}, 0.1, 6},                         // ceil(1.1*10/2) = 5.5 -> 6
		{[]int64{9}, 0.1, 11},                           // ceil(1.1*10) is 11, not float's 12
		{[]int64{-5, 3}, 1, 4},                          // negatives count as 0: ceil(2*4/2)
		{[]int64{math.MaxInt64, 1}, 0.25, 5 << 60},      // m saturates: ceil(1.25*(2^63-1)/2)
		{[]int64{math.MaxInt64}, 1, math.MaxUint64 - 1}, // 2*(2^63-1), exactly
		{[]int64{math.MaxInt64}, 3, math.MaxUint64},     // 4*(2^63-1) saturates
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.load, tt.eps), func(t *testing.T) {
			got, ok := capacity(fleet{load: tt.load}, len(tt.load), tt.eps)
			if !ok || got != tt.want {
				t.Errorf("capacity = %d, %v; want %d, true", got, ok, tt.want)
			}
		})
	}
}

// TestLoadsShorterThanRing: members beyond loads.Len() are ineligible.
func TestLoadsShorterThanRing(t *testing.T) {
	r := mustNew(t, memberNames(3), nil)
	for _, key := range testKeys(200) {
		for _, eps := range []float64{0, 0.25} {
			if got := r.Pick(key, idle(1), eps, nil); got != 0 {
				t.Fatalf("Pick(%#x, eps %v) = %d, want 0, the only member described", key, eps, got)
			}
		}
	}
	if got := r.Pick(1, idle(0), 0.25, nil); got != -1 {
		t.Errorf("Pick with no loads = %d, want -1", got)
	}
	if got := r.Pick(1, nil, 0.25, nil); got != -1 {
		t.Errorf("Pick with nil loads = %d, want -1", got)
	}
}

// TestManyMembers covers rings larger than the walk's stack bitset.
func TestManyMembers(t *testing.T) {
	const n = trackedMembers + 44
	r := mustNew(t, memberNames(n), &Options{VNodes: 16})
	f := idle(n)
	f.eligible = make([]bool, n)
	f.eligible[n-1] = true
	for _, key := range testKeys(50) {
		if got := r.Pick(key, f, 0.25, nil); got != n-1 {
			t.Fatalf("Pick = %d, want %d, the only eligible member", got, n-1)
		}
		if got := r.Pick(key, f, 0, []int{n - 1}); got != -1 {
			t.Fatalf("Pick = %d, want -1", got)
		}
	}
}

func TestPickDoesNotAllocate(t *testing.T) {
	r := mustNew(t, memberNames(12), nil)
	f := idle(12)
	f.load[3] = 50
	var loads Loads = f // converted once, as the gateway passes a pointer
	skip := []int{1}
	keys := testKeys(64)
	allocs := testing.AllocsPerRun(100, func() {
		for _, key := range keys {
			r.Pick(key, loads, 0.25, skip)
		}
	})
	if allocs != 0 {
		t.Errorf("Pick allocated %v times per run", allocs)
	}
}

func BenchmarkPick(b *testing.B) {
	for _, n := range []int{3, 12} {
		r := mustNew(b, memberNames(n), nil)
		f := idle(n)
		for i := range f.load {
			f.load[i] = int64(20 + i%3)
		}
		var loads Loads = f
		keys := testKeys(1024)
		for _, eps := range []float64{0, 0.25} {
			b.Run(fmt.Sprintf("members=%d/epsilon=%v", n, eps), func(b *testing.B) {
				b.ReportAllocs()
				k := 0
				for b.Loop() {
					r.Pick(keys[k&1023], loads, eps, nil)
					k++
				}
			})
		}
	}
}

// TestPickFloor: below the floor a member keeps its work however uneven the
// fleet; at the floor the bound applies again.
func TestPickFloor(t *testing.T) {
	r, err := New([]string{"a", "b", "c"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const key = 12345
	home := r.Pick(key, fixedLoads{0, 0, 0}, 0.25, nil)
	uneven := fixedLoads{0, 0, 0}
	uneven[home] = 5 // average 5/3: the bound alone would pass work on
	if got := r.Pick(key, uneven, 0.25, nil); got == home {
		t.Fatalf("without a floor, 5 vs 0 in flight kept the work at home")
	}
	if got := r.PickFloor(key, uneven, 0.25, 10, nil); got != home {
		t.Errorf("under the floor of 10 the work moved from %d to %d", home, got)
	}
	uneven[home] = 10
	if got := r.PickFloor(key, uneven, 0.25, 10, nil); got == home {
		t.Errorf("at the floor the bound did not apply")
	}
}

type fixedLoads []int64

func (f fixedLoads) Len() int             { return len(f) }
func (f fixedLoads) InFlight(i int) int64 { return f[i] }
func (f fixedLoads) Eligible(int) bool    { return true }

package balance

import (
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/ring"
)

type fleet struct {
	load     []int64
	eligible []bool
}

func (f fleet) Len() int             { return len(f.load) }
func (f fleet) InFlight(i int) int64 { return f.load[i] }
func (f fleet) Eligible(i int) bool  { return f.eligible == nil || f.eligible[i] }

func TestPick(t *testing.T) {
	tests := []struct {
		name     string
		p        Policy
		f        fleet
		seq, rnd uint64
		skip     []int
		want     int
	}{
		{"round-robin in turn", RoundRobin, fleet{load: []int64{0, 0, 0}}, 4, 0, nil, 1},
		{"round-robin skips tried", RoundRobin, fleet{load: []int64{0, 0, 0}}, 4, 0, []int{1}, 2},
		{"round-robin skips ineligible", RoundRobin, fleet{load: []int64{0, 0, 0}, eligible: []bool{true, false, false}}, 1, 0, nil, 0},
		{"least in flight", LeastInFlight, fleet{load: []int64{5, 1, 3}}, 0, 0, nil, 1},
		{"least in flight tie at random start", LeastInFlight, fleet{load: []int64{2, 2, 2}}, 0, 2, nil, 2},
		{"least in flight skips tried", LeastInFlight, fleet{load: []int64{5, 1, 3}}, 0, 0, []int{1}, 2},
		{"none left", LeastInFlight, fleet{load: []int64{0, 0}}, 0, 0, []int{0, 1}, -1},
		{"empty fleet", RoundRobin, fleet{}, 0, 0, nil, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Pick(tt.p, tt.f, Input{Seq: tt.seq, Rnd: tt.rnd}, tt.skip); got != tt.want {
				t.Errorf("Pick = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestRoundRobinSpreadsEvenly(t *testing.T) {
	f := fleet{load: make([]int64, 3)}
	counts := make([]int, 3)
	for seq := range uint64(30) {
		counts[Pick(RoundRobin, f, Input{Seq: seq}, nil)]++
	}
	for i, c := range counts {
		if c != 10 {
			t.Errorf("replica %d got %d of 30", i, c)
		}
	}
}

func TestMayRetry(t *testing.T) {
	tests := []struct {
		name string
		a    Attempt
		want bool
	}{
		{"never reached", Attempt{Outcome: NotDelivered, MaxRetries: 1}, true},
		{"draining refused it", Attempt{Outcome: RefusedDraining, MaxRetries: 1}, true},
		{"delivered, mutating", Attempt{Outcome: Delivered, MaxRetries: 3}, false},
		{"delivered, read-only or idempotent", Attempt{Outcome: Delivered, Safe: true, MaxRetries: 1}, true},
		{"never reached, bound spent", Attempt{Outcome: NotDelivered, Retries: 1, MaxRetries: 1}, false},
		{"safe, bound spent", Attempt{Outcome: Delivered, Safe: true, Retries: 2, MaxRetries: 2}, false},
		{"retries off", Attempt{Outcome: NotDelivered, MaxRetries: 0}, false},
		{"draining, bound spent", Attempt{Outcome: RefusedDraining, Retries: 3, MaxRetries: 3}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MayRetry(tt.a); got != tt.want {
				t.Errorf("MayRetry(%+v) = %v, want %v", tt.a, got, tt.want)
			}
		})
	}
}

func TestParsePolicy(t *testing.T) {
	for _, s := range []string{"hash", "round-robin", "least-inflight"} {
		p, err := ParsePolicy(s)
		if err != nil || p.String() != s {
			t.Errorf("ParsePolicy(%q) = %v, %v", s, p, err)
		}
	}
	if _, err := ParsePolicy("random"); err == nil {
		t.Error("ParsePolicy accepted an unknown policy")
	}
}

func BenchmarkPickLeastInFlight(b *testing.B) {
	f := fleet{load: []int64{3, 1, 4, 1, 5, 9, 2, 6}}
	for i := 0; b.Loop(); i++ {
		Pick(LeastInFlight, f, Input{Seq: uint64(i), Rnd: uint64(i)}, nil)
	}
}

// TestHashKeepsCallersAndBoundsLoad: under Hash a caller's key maps to one
// replica; when that replica is over the bound, work passes on.
func TestHashKeepsCallersAndBoundsLoad(t *testing.T) {
	r, err := ring.New([]string{"a", "b", "c"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	idle := fleet{load: []int64{0, 0, 0}}
	home := Pick(Hash, idle, Input{Key: 42, Ring: r, Epsilon: 0.25}, nil)
	for range 5 {
		if got := Pick(Hash, idle, Input{Key: 42, Ring: r, Epsilon: 0.25, Seq: 9, Rnd: 7}, nil); got != home {
			t.Fatalf("same key moved from %d to %d", home, got)
		}
	}
	busy := fleet{load: []int64{3, 3, 3}}
	busy.load[home] = 30
	if got := Pick(Hash, busy, Input{Key: 42, Ring: r, Epsilon: 0.25}, nil); got == home {
		t.Errorf("an overloaded home replica (30 vs 3) still took the work")
	}
	if got := Pick(Hash, idle, Input{Key: 42}, nil); got < 0 {
		t.Errorf("hash without a ring picked nothing")
	}
}

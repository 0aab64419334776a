package ring

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var sweep = flag.Bool("sweep", false, "run TestVNodesSweep, the measurement behind DefaultVNodes (several seconds)")

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		names   []string
		opts    *Options
		wantLen int
		wantErr error
	}{
		{"nil options", memberNames(3), nil, 3, nil},
		{"empty", nil, nil, 0, nil},
		{"empty name is a name", []string{"", "a"}, nil, 2, nil},
		{"custom vnodes", memberNames(2), &Options{VNodes: 7}, 2, nil},
		{"duplicate", []string{"a", "b", "a"}, nil, 0, ErrDuplicateName},
		{"negative vnodes", memberNames(1), &Options{VNodes: -1}, 0, errAny},
		{"too many vnodes", memberNames(1), &Options{VNodes: MaxVNodes + 1}, 0, errAny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := New(tt.names, tt.opts)
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("New: %v", err)
			case tt.wantErr == nil:
				if r.Len() != tt.wantLen {
					t.Errorf("Len = %d, want %d", r.Len(), tt.wantLen)
				}
				if want := tt.wantLen * tt.opts.vnodes(); len(r.hashes) != want {
					t.Errorf("%d points, want %d", len(r.hashes), want)
				}
				if !slices.IsSorted(r.hashes) {
					t.Error("points not sorted")
				}
			case err == nil:
				t.Fatalf("New succeeded, want error %v", tt.wantErr)
			case tt.wantErr != errAny && !errors.Is(err, tt.wantErr):
				t.Errorf("New: %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// errAny marks a test case that wants some error, whichever.
var errAny = errors.New("any error")

func TestNewCopiesNames(t *testing.T) {
	names := memberNames(3)
	r := mustNew(t, names, nil)
	names[0] = "changed"
	if r.Name(0) != "replica-0" {
		t.Errorf("Name(0) = %q after caller changed its slice", r.Name(0))
	}
}

func TestEmptyRingPicksNothing(t *testing.T) {
	r := mustNew(t, nil, nil)
	for _, eps := range []float64{0, 0.25} {
		if got := r.Pick(1, idle(0), eps, nil); got != -1 {
			t.Errorf("Pick(eps %v) = %d, want -1", eps, got)
		}
	}
}

// TestDeterminism: rings built separately from the same names route every
// key identically, and the member chosen, by name, does not depend on the
// order of the names, with or without the bound.
func TestDeterminism(t *testing.T) {
	keys := testKeys(10_000)
	names := memberNames(5)
	a, b := mustNew(t, names, nil), mustNew(t, slices.Clone(names), nil)
	if diff := cmp.Diff(assign(a, keys), assign(b, keys)); diff != "" {
		t.Errorf("two rings of the same names differ (-a +b):\n%s", diff)
	}
	load := map[string]int64{"replica-0": 9, "replica-1": 30, "replica-2": 0, "replica-3": 12, "replica-4": 4}
	orders := [][]string{
		{"replica-4", "replica-3", "replica-2", "replica-1", "replica-0"},
		{"replica-2", "replica-0", "replica-4", "replica-1", "replica-3"},
	}
	for _, order := range orders {
		t.Run(fmt.Sprint(order), func(t *testing.T) {
			p := mustNew(t, order, nil)
			if diff := cmp.Diff(assign(a, keys), assign(p, keys)); diff != "" {
				t.Errorf("plain picks depend on name order (-slice +permuted):\n%s", diff)
			}
			if diff := cmp.Diff(boundedPicks(a, keys, load), boundedPicks(p, keys, load)); diff != "" {
				t.Errorf("bounded picks depend on name order (-slice +permuted):\n%s", diff)
			}
		})
	}
}

// boundedPicks maps keys to member names with epsilon 0.25 under the given
// loads by name.
func boundedPicks(r *Ring, keys []uint64, load map[string]int64) []string {
	f := idle(r.Len())
	for i := range f.load {
		f.load[i] = load[r.Name(i)]
	}
	out := make([]string, len(keys))
	for k, key := range keys {
		out[k] = r.Name(r.Pick(key, f, 0.25, nil))
	}
	return out
}

func BenchmarkNew(b *testing.B) {
	for _, n := range []int{3, 12} {
		names := memberNames(n)
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := New(names, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

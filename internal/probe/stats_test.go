package probe

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// obs builds an observation from replica names, one per answer, and a
// number of errors.
func obs(errs int, answers ...string) Observation {
	var o Observation
	for _, a := range answers {
		o.record(a)
	}
	o.Errors = errs
	return o
}

func TestPrimary(t *testing.T) {
	tests := []struct {
		name string
		o    Observation
		want string
	}{
		{"none", obs(2), ""},
		{"one", obs(0, "a", "a"), "a"},
		{"most", obs(0, "b", "a", "b"), "b"},
		{"tie to the smaller name", obs(0, "c", "b", "c", "b"), "b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.o.Primary(); got != tt.want {
				t.Errorf("Primary() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	tests := []struct {
		name string
		obs  []Observation
		want Summary
	}{
		{
			name: "empty",
			want: Summary{Replicas: []ReplicaShare{}},
		},
		{
			name: "all sticky, even spread",
			obs:  []Observation{obs(0, "a", "a"), obs(0, "b", "b"), obs(0, "c", "c")},
			want: Summary{
				Identities: 3, Requests: 6, CleanIdentities: 3, StickyIdentities: 3, Stickiness: 1,
				Replicas: []ReplicaShare{
					{Name: "a", Identities: 1, Requests: 2},
					{Name: "b", Identities: 1, Requests: 2},
					{Name: "c", Identities: 1, Requests: 2},
				},
				MeanIdentities: 1, MinOverMean: 1, MaxOverMean: 1,
			},
		},
		{
			name: "one identity split",
			obs:  []Observation{obs(0, "a", "a"), obs(0, "a", "b", "a"), obs(0, "b")},
			want: Summary{
				Identities: 3, Requests: 6, CleanIdentities: 3, StickyIdentities: 2, Stickiness: 2.0 / 3,
				Replicas: []ReplicaShare{
					{Name: "a", Identities: 2, Requests: 4},
					{Name: "b", Identities: 1, Requests: 2},
				},
				MeanIdentities: 1.5, MinOverMean: 1 / 1.5, MaxOverMean: 2 / 1.5,
			},
		},
		{
			name: "errors leave stickiness to clean identities",
			obs:  []Observation{obs(1, "a"), obs(0, "a", "a"), obs(3)},
			want: Summary{
				Identities: 3, Requests: 7, Errors: 4, ErrorIdentities: 2,
				CleanIdentities: 1, StickyIdentities: 1, Stickiness: 1,
				Replicas:       []ReplicaShare{{Name: "a", Identities: 2, Requests: 3}},
				MeanIdentities: 2, MinOverMean: 1, MaxOverMean: 1,
			},
		},
		{
			name: "all failed",
			obs:  []Observation{obs(2), obs(2)},
			want: Summary{Identities: 2, Requests: 4, Errors: 4, ErrorIdentities: 2, Replicas: []ReplicaShare{}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Summarize(tt.obs)
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
				t.Errorf("Summarize() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExpectSticky(t *testing.T) {
	tests := []struct {
		name string
		obs  []Observation
		want string // "" for nil
	}{
		{"sticky", []Observation{obs(0, "a", "a"), obs(0, "b")}, ""},
		{"nothing made", nil, "no requests made"},
		{"split", []Observation{obs(0, "a", "b"), obs(0, "a"), obs(0, "a"), obs(0, "b")}, "stickiness 75.0% < 100%"},
		{"one failure", []Observation{obs(0, "a"), obs(1, "b")}, "1 of 3 requests failed"},
		{"all failed", []Observation{obs(2)}, "no identity answered without errors (2 of 2 requests failed)"},
		{"never rounds up to 100", sticky(999, obs(0, "a", "b")), "stickiness 99.9% < 100%"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Summarize(tt.obs).ExpectSticky()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("ExpectSticky() = %v, want nil", err)
			case tt.want != "" && (err == nil || err.Error() != tt.want || !errors.Is(err, ErrNotSticky)):
				t.Errorf("ExpectSticky() = %v, want %q wrapping ErrNotSticky", err, tt.want)
			}
		})
	}
}

// sticky returns n sticky observations followed by extra.
func sticky(n int, extra ...Observation) []Observation {
	out := make([]Observation, 0, n+len(extra))
	for range n {
		out = append(out, obs(0, "a"))
	}
	return append(out, extra...)
}

func TestMoved(t *testing.T) {
	tests := []struct {
		name          string
		base, current map[int]string
		want          Movement
	}{
		{"nothing", nil, nil, Movement{From: map[string]int{}}},
		{
			"none moved",
			map[int]string{0: "a", 1: "b"}, map[int]string{0: "a", 1: "b"},
			Movement{Compared: 2, From: map[string]int{}},
		},
		{
			"one of a replica moved",
			map[int]string{0: "a", 1: "b", 2: "c", 3: "c"}, map[int]string{0: "a", 1: "b", 2: "a", 3: "b"},
			Movement{Compared: 4, Moved: 2, Share: 0.5, From: map[string]int{"c": 2}},
		},
		{
			"only identities in both runs count",
			map[int]string{0: "a", 1: "b", 7: "c"}, map[int]string{0: "b", 1: "b", 9: "a"},
			Movement{Compared: 2, Moved: 1, Share: 0.5, From: map[string]int{"a": 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Moved(tt.base, tt.current)); diff != "" {
				t.Errorf("Moved() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPrimaries(t *testing.T) {
	got := Primaries([]Observation{obs(0, "a"), obs(3), obs(1, "c", "b", "c")})
	want := map[int]string{0: "a", 2: "c"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Primaries() mismatch (-want +got):\n%s", diff)
	}
}

func TestPercent(t *testing.T) {
	tests := []struct {
		share float64
		want  string
	}{
		{0, "0.0%"}, {0.93, "93.0%"}, {1, "100.0%"}, {0.99999, "99.9%"}, {1.0 / 3, "33.3%"},
	}
	for _, tt := range tests {
		if got := Percent(tt.share); got != tt.want {
			t.Errorf("Percent(%v) = %q, want %q", tt.share, got, tt.want)
		}
	}
}

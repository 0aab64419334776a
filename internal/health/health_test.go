package health

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNext(t *testing.T) {
	up := func(fails int) Status { return Status{State: StateUp, Failures: fails} }
	down := func(oks int) Status { return Status{State: StateDown, Successes: oks} }
	draining := func(oks, fails int) Status {
		return Status{State: StateDraining, Successes: oks, Failures: fails}
	}
	tests := []struct {
		name       string
		from       Status
		r          Result
		fall, rise int
		want       Status
	}{
		{"up stays up on ok", up(0), ResultOK, 2, 2, up(0)},
		{"ok breaks a failure streak", up(1), ResultOK, 2, 2, up(0)},
		{"first failure only counts", up(0), ResultFail, 2, 2, up(1)},
		{"fall-th failure takes it down", up(1), ResultFail, 2, 2, down(0)},
		{"fall 1 takes it down at once", up(0), ResultFail, 1, 2, down(0)},
		{"fall 0 counts as 1", up(0), ResultFail, 0, 2, down(0)},
		{"fall 3 needs three", up(1), ResultFail, 3, 2, up(2)},
		{"draining answer drains at once", up(0), ResultDraining, 2, 2, draining(0, 0)},
		{"draining answer drains mid failure streak", up(1), ResultDraining, 2, 2, draining(0, 0)},
		{"down stays down on failure", down(0), ResultFail, 2, 2, down(0)},
		{"failure breaks a success streak", down(1), ResultFail, 2, 2, down(0)},
		{"first ok only counts", down(0), ResultOK, 2, 2, down(1)},
		{"rise-th ok brings it up", down(1), ResultOK, 2, 2, up(0)},
		{"rise 1 brings it up at once", down(0), ResultOK, 2, 1, up(0)},
		{"down replica answering draining drains", down(1), ResultDraining, 2, 2, draining(0, 0)},
		{"draining stays on draining", draining(1, 1), ResultDraining, 2, 2, draining(0, 0)},
		{"draining: first ok only counts", draining(0, 0), ResultOK, 2, 2, draining(1, 0)},
		{"draining: rise-th ok brings it up", draining(1, 0), ResultOK, 2, 2, up(0)},
		{"draining: first failure only counts", draining(1, 0), ResultFail, 2, 2, draining(0, 1)},
		{"draining: fall-th failure takes it down", draining(0, 1), ResultFail, 2, 2, down(0)},
		{"draining: ok breaks a failure streak", draining(0, 1), ResultOK, 2, 2, draining(1, 0)},
		{"unknown result counts as failure", up(0), Result(42), 1, 1, down(0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Next(tt.from, tt.r, tt.fall, tt.rise)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Next(%+v, %v, %d, %d) (-want +got):\n%s", tt.from, tt.r, tt.fall, tt.rise, diff)
			}
		})
	}
}

// TestNextSequence walks the lifecycle a rolling deploy shows: a replica fails,
// recovers, drains on SIGTERM, and comes back after a restart.
func TestNextSequence(t *testing.T) {
	seq := []Result{
		ResultOK, ResultFail, ResultFail, // down after fall 2
		ResultOK, ResultOK, // up after rise 2
		ResultDraining,         // draining at once
		ResultFail, ResultFail, // listener closed: down
		ResultOK, ResultOK, // restarted: up
	}
	want := []State{
		StateUp, StateUp, StateDown,
		StateDown, StateUp,
		StateDraining,
		StateDraining, StateDown,
		StateDown, StateUp,
	}
	var s Status
	var got []State
	for _, r := range seq {
		s = Next(s, r, 2, 2)
		got = append(got, s.State)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
}

func TestStateString(t *testing.T) {
	for s, want := range map[State]string{StateUp: "up", StateDown: "down", StateDraining: "draining", 9: "State(9)"} {
		if got := s.String(); got != want {
			t.Errorf("State(%d).String() = %q, want %q", int32(s), got, want)
		}
	}
	var zero State
	if zero != StateUp {
		t.Error("the zero State is not up")
	}
}

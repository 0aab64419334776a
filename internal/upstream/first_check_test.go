package upstream

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFirstCheckDecides: until a replica has passed a check, one check
// decides its state (a dead replica is down after the first round, not
// after fall rounds, and one that comes up later needs one check); from its
// first pass on, fall and rise apply.
func TestFirstCheckDecides(t *testing.T) {
	b := newBackend(t, modeError)
	f := newFleet(t, Spec{Name: "r", URL: b.URL + "/mcp"})
	var ch changes
	c := newChecker(t, f, CheckOptions{Fall: 3, Rise: 3, OnChange: ch.record})
	steps := []struct {
		m    mode
		want State
	}{
		{modeError, StateDown}, // the first check: one failure is enough
		{modeOK, StateUp},      // never passed yet: one pass is enough
		{modeError, StateUp},   // proven: fall 3 applies
		{modeError, StateUp},   //
		{modeError, StateDown}, // the third failure
		{modeOK, StateDown},    // rise 3 applies
		{modeOK, StateDown},    //
		{modeOK, StateUp},      // the third pass
		{modeDraining, StateDraining},
	}
	for i, st := range steps {
		if i == 0 && f.Snapshot().At(0).State() != StateUp {
			t.Fatal("a replica not yet checked is not up")
		}
		b.set(st.m)
		c.Check(t.Context())
		if got := f.Snapshot().At(0).State(); got != st.want {
			t.Fatalf("step %d: state %v, want %v", i, got, st.want)
		}
	}
	want := []string{"r up->down", "r down->up", "r up->down", "r down->up", "r up->draining"}
	if diff := cmp.Diff(want, ch.list()); diff != "" {
		t.Errorf("OnChange calls (-want +got):\n%s", diff)
	}
}

// TestFirstCheckOfADrainingReplica: a replica draining from its first
// check has not passed one; it comes up on its first pass.
func TestFirstCheckOfADrainingReplica(t *testing.T) {
	b := newBackend(t, modeDraining)
	f := newFleet(t, Spec{Name: "r", URL: b.URL + "/mcp"})
	c := newChecker(t, f, CheckOptions{})
	c.Check(t.Context())
	if got := f.Snapshot().At(0).State(); got != StateDraining {
		t.Fatalf("after a draining answer: %v", got)
	}
	b.set(modeOK)
	c.Check(t.Context())
	if got := f.Snapshot().At(0).State(); got != StateUp {
		t.Fatalf("after its first pass: %v, want up", got)
	}
}

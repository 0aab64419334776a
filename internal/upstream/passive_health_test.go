package upstream

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// lendPolicy puts on f the policy a running Checker with options o would
// lend it, as Run does, without Run's rounds racing the test's reports.
func lendPolicy(t *testing.T, f *Fleet, o CheckOptions) {
	t.Helper()
	if !f.policy.CompareAndSwap(nil, newChecker(t, f, o).policy) {
		t.Fatal("a policy is already lent")
	}
	t.Cleanup(func() { f.policy.Store(nil) })
}

func TestPassiveReportsIgnoredWithoutChecker(t *testing.T) {
	f := newFleet(t, Spec{Name: "r", URL: "http://h:1/mcp"})
	r := f.Snapshot().At(0)
	for range 5 {
		r.ReportConnectFailure()
	}
	r.ReportDraining()
	if r.State() != StateUp || !f.Snapshot().Eligible(0) {
		t.Errorf("state %v without a checker, want up", r.State())
	}
}

func TestReportConnectFailureEjects(t *testing.T) {
	f := newFleet(t, Spec{Name: "r", URL: "http://h:1/mcp"})
	var ch changes
	lendPolicy(t, f, CheckOptions{OnChange: ch.record})
	r := f.Snapshot().At(0)

	r.ReportConnectFailure()
	if r.State() != StateUp {
		t.Fatalf("one connect failure: %v, want up (fall 2)", r.State())
	}
	r.ReportConnectFailure()
	if r.State() != StateDown || f.Snapshot().Eligible(0) {
		t.Fatalf("two connect failures: %v, want down", r.State())
	}
	r.ReportSuccess() // a pinned request got through: still down
	if r.State() != StateDown {
		t.Errorf("ReportSuccess brought a down replica %v", r.State())
	}
	if diff := cmp.Diff([]string{"r up->down"}, ch.list()); diff != "" {
		t.Errorf("OnChange calls (-want +got):\n%s", diff)
	}
}

func TestReportSuccessBreaksFailureStreak(t *testing.T) {
	f := newFleet(t, Spec{Name: "r", URL: "http://h:1/mcp"})
	lendPolicy(t, f, CheckOptions{})
	r := f.Snapshot().At(0)
	for range 3 {
		r.ReportConnectFailure()
		r.ReportSuccess()
	}
	if r.State() != StateUp {
		t.Errorf("isolated failures took the replica %v", r.State())
	}
}

func TestReportDrainingDrainsAtOnce(t *testing.T) {
	f := newFleet(t, Spec{Name: "r", URL: "http://h:1/mcp"})
	var ch changes
	lendPolicy(t, f, CheckOptions{OnChange: ch.record})
	r := f.Snapshot().At(0)
	r.ReportDraining()
	if r.State() != StateDraining || f.Snapshot().Eligible(0) {
		t.Fatalf("after a draining answer: %v, want draining", r.State())
	}
	r.ReportSuccess() // pinned sessions still succeed on a draining replica
	r.ReportSuccess()
	if r.State() != StateDraining {
		t.Errorf("ReportSuccess moved a draining replica to %v", r.State())
	}
	r.ReportConnectFailure()
	r.ReportConnectFailure() // listener closed at the end of the drain window
	if r.State() != StateDown {
		t.Errorf("draining replica after two connect failures: %v, want down", r.State())
	}
	if diff := cmp.Diff([]string{"r up->draining", "r draining->down"}, ch.list()); diff != "" {
		t.Errorf("OnChange calls (-want +got):\n%s", diff)
	}
}

// TestEligibleFollowsState checks each replica of a mixed fleet.
func TestEligibleFollowsState(t *testing.T) {
	f := newFleet(t,
		Spec{Name: "up", URL: newBackend(t, modeOK).URL},
		Spec{Name: "down", URL: newBackend(t, modeError).URL},
		Spec{Name: "draining", URL: newBackend(t, modeDraining).URL},
	)
	newChecker(t, f, CheckOptions{Fall: 1}).Check(t.Context())
	s := f.Snapshot()
	for i := range s.Len() {
		r := s.At(i)
		if r.State().String() != r.Name() {
			t.Errorf("replica %s is %v", r.Name(), r.State())
		}
		if s.Eligible(i) != (r.Name() == "up") {
			t.Errorf("Eligible(%s) = %v", r.Name(), s.Eligible(i))
		}
	}
}

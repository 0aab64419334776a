package load

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/sim"
	"github.com/mcpfleet/mcpfleet/internal/testproc"
)

// fleetRun runs s for real on a local fleet at speed and returns the report.
func fleetRun(t *testing.T, bin string, s sim.Scenario, speed float64, burn int) *Report {
	t.Helper()
	return runFor(t, &Options{Scenario: s, Speed: speed, Fleet: true, Binary: bin, Burn: burn})
}

// fleetRunCores runs s at speed 1 on replicas of cores cores each.
func fleetRunCores(t *testing.T, bin string, s sim.Scenario, cores int) *Report {
	t.Helper()
	return runFor(t, &Options{Scenario: s, Speed: 1, Fleet: true, Binary: bin, ReplicaCores: cores})
}

func runFor(t *testing.T, o *Options) *Report {
	t.Helper()
	s := o.Scenario
	if s.Routing != sim.Fleet || s.Gateways > 1 {
		o.HAProxy = testproc.FindBinary(t, "haproxy", "haproxy", "MCPFLEET_REQUIRE_BALANCERS")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.ValidateResultJSON(b); err != nil {
		t.Fatalf("the real run's JSON is not in the simulator's schema: %v", err)
	}
	return rep
}

// TestSilentStreamsAgreeWithTheModel: mission 1 (silent streams), broken
// and fixed, on a shortened traffic, through HAProxy's consistent hashing
// behind an idle-cutting proxy: the real run meets the goal exactly when
// the simulator does, and the cuts it counts are close to the model's.
func TestSilentStreamsAgreeWithTheModel(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a fleet")
	}
	bin := testproc.BuildMcpfleet(t)
	m, _ := sim.MissionByNumber(1)
	for _, setup := range []string{"broken", "fixed"} {
		t.Run(setup, func(t *testing.T) {
			s := m.Broken
			if setup == "fixed" {
				s = m.Reference
			}
			s.TrafficSeconds = 240
			predicted := sim.MustRun(s)
			rep := fleetRun(t, bin, s, 40, 0)
			t.Logf("sim: %d cuts, %d resumes, %d failed; real: %d cuts, %d resumes, %d failed", predicted.IdleCuts, predicted.Resumes, predicted.Failed, rep.IdleCuts, rep.Resumes, rep.Failed)
			if got, want := m.GoalMet(rep.Result), m.GoalMet(predicted); got != want {
				t.Fatalf("goal met: real %v, sim %v", got, want)
			}
			if rep.Issued != predicted.Issued || rep.Completed+rep.Failed != rep.Issued {
				t.Fatalf("calls: real %d issued, %d completed, %d failed; sim %d issued", rep.Issued, rep.Completed, rep.Failed, predicted.Issued)
			}
			if setup == "broken" && (rep.IdleCuts < predicted.IdleCuts/2 || rep.IdleCuts > 2*predicted.IdleCuts) {
				t.Fatalf("idle cuts: real %d, sim %d: beyond a factor of 2", rep.IdleCuts, predicted.IdleCuts)
			}
		})
	}
}

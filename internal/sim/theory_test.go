package sim

import (
	"math"
	"testing"
)

// grid returns s under every protocol and routing.
func grid(s Scenario) map[string]Scenario {
	out := map[string]Scenario{}
	for _, p := range []string{Local2025, Shared2025, Rev2026} {
		for _, r := range []string{RoundRobin, Affinity, Fleet} {
			v := s
			v.Protocol, v.Routing = p, r
			out[p+"/"+r] = v
		}
	}
	return out
}

func within(got, want, rel float64) bool { return math.Abs(got-want) <= rel*want }

func TestUtilizationMatchesTheDrawnTraffic(t *testing.T) {
	s := Default()
	s.Protocol, s.Routing = Rev2026, RoundRobin
	var work float64
	for _, c := range Traffic(&s) {
		work += c.Duration.Seconds()
	}
	want := work / (float64(s.Replicas*s.Slots) * s.TrafficSeconds)
	if got := MustRun(s).Utilization; !within(got, want, 0.02) {
		t.Errorf("utilization %.4f, drawn traffic says %.4f", got, want)
	}
}

func TestUtilizationMatchesTheory(t *testing.T) {
	if testing.Short() {
		t.Skip("long run")
	}
	s := Default()
	s.Protocol, s.Routing, s.TrafficSeconds = Shared2025, RoundRobin, 20_000
	mean := MeanDuration(s.DurationMedian, s.DurationSigma, s.DurationCap)
	want := s.ArrivalRate * mean / float64(s.Replicas*s.Slots)
	r := MustRun(s)
	if !within(r.Utilization, want, 0.02) {
		t.Errorf("utilization %.4f, theory %.4f (mean duration %.4f s)", r.Utilization, want, mean)
	}
	for _, f := range r.Replicas {
		if !within(f.Utilization, want, 0.05) {
			t.Errorf("%s utilization %.4f, theory %.4f under random picks", f.Name, f.Utilization, want)
		}
	}
}

func TestMeanDuration(t *testing.T) {
	// Uncapped, the log-normal's mean is median * e^(sigma^2/2).
	if got, want := MeanDuration(1.2, 1, 1e9), 1.2*math.Exp(0.5); !within(got, want, 1e-9) {
		t.Errorf("uncapped mean %.6f, want %.6f", got, want)
	}
	if got := MeanDuration(1.2, 1, 30); got >= 1.2*math.Exp(0.5) || got < 1.9 {
		t.Errorf("capped mean %.6f out of range", got)
	}
	if got := MeanDuration(5, 0, 3); got != 3 {
		t.Errorf("degenerate capped mean %v, want 3", got)
	}
}

// stormy is a fleet where everything can go wrong.
func stormy() Scenario {
	s := Default()
	s.SlowTools, s.HotClient, s.Deploy = true, true, true
	s.IdleTimeout, s.DrainWindow = 30, 10
	return s
}

func TestKeepAliveBelowIdleTimeoutMeansNoCut(t *testing.T) {
	for name, s := range grid(stormy()) {
		t.Run(name, func(t *testing.T) {
			if r := MustRun(s); r.IdleCuts == 0 {
				t.Fatal("without keep-alive no stream was cut: the check below proves nothing")
			}
			s.KeepAlive = 20
			if r := MustRun(s); r.IdleCuts != 0 {
				t.Errorf("keep-alive %g s < idle timeout %g s, yet %d cuts", s.KeepAlive, s.IdleTimeout, r.IdleCuts)
			}
		})
	}
}

func TestNo404InRev2026(t *testing.T) {
	for _, r := range []string{RoundRobin, Affinity, Fleet} {
		s := stormy()
		s.Protocol, s.Routing = Rev2026, r
		if res := MustRun(s); res.NotFound != 0 || res.Reinitializations != 0 {
			t.Errorf("%s: %d 404s, %d re-initializations", r, res.NotFound, res.Reinitializations)
		}
	}
}

func TestNo404WithSharedSessionsOrStickySessions(t *testing.T) {
	s := Default()
	s.SlowTools, s.HotClient = true, true
	for _, sc := range []Scenario{
		func() Scenario { v := stormy(); v.Protocol, v.Routing = Shared2025, RoundRobin; return v }(),
		func() Scenario { v := s; v.Routing = Affinity; return v }(),
		func() Scenario { v := s; v.Routing = Fleet; return v }(),
	} {
		if r := MustRun(sc); r.NotFound != 0 {
			t.Errorf("%s: %d 404s", sc.Describe(), r.NotFound)
		}
	}
}

func TestIdempotencyMeansNoDuplicateMutation(t *testing.T) {
	dups := 0
	for name, s := range grid(stormy()) {
		t.Run(name, func(t *testing.T) {
			dups += MustRun(s).DuplicateMutations
			s.Idempotency = true
			if r := MustRun(s); r.DuplicateMutations != 0 {
				t.Errorf("idempotency on, yet %d duplicate mutations", r.DuplicateMutations)
			}
		})
	}
	if dups == 0 {
		t.Error("no duplicate mutation anywhere without idempotency: the check proves nothing")
	}
}

func TestDrainLongerThanTheCapKillsNothing(t *testing.T) {
	s := Default()
	s.Deploy, s.HotClient, s.DeployAt = true, true, 30
	for name, sc := range grid(s) {
		t.Run(name, func(t *testing.T) {
			sc.DrainWindow = 5
			if r := MustRun(sc); r.Killed == 0 {
				t.Log("a 5 s drain killed nothing on this seed")
			}
			sc.DrainWindow = s.DurationCap + 1
			if r := MustRun(sc); r.Killed != 0 {
				t.Errorf("drain %g s over the %g s cap, yet %d executions killed", sc.DrainWindow, s.DurationCap, r.Killed)
			}
		})
	}
}

func TestRebootLosesLocalSessions(t *testing.T) {
	s := Default()
	s.Deploy, s.Routing = true, Affinity
	r := MustRun(s)
	if r.NotFound == 0 || r.Reinitializations == 0 {
		t.Errorf("a rolling deploy under local sessions and affinity gave %d 404s, %d re-initializations", r.NotFound, r.Reinitializations)
	}
	s.Routing = Fleet
	if r := MustRun(s); r.NotFound == 0 || r.Undelivered == 0 {
		t.Errorf("mcpfleet: sessions on a draining replica gave %d 404s, %d refused", r.NotFound, r.Undelivered)
	}
}

package sim

import "testing"

func TestMissionsAreCalibrated(t *testing.T) {
	for _, m := range Missions() {
		t.Run(m.Name, func(t *testing.T) {
			if err := m.Broken.Validate(); err != nil {
				t.Fatal(err)
			}
			broken, err := m.Evaluate(m.Broken)
			if err != nil {
				t.Fatal(err)
			}
			if broken.Stars != 0 {
				t.Errorf("the broken setup earns %d stars, want 0", broken.Stars)
			}
			failing := 0
			for _, met := range broken.MetOn {
				if !met {
					failing++
				}
			}
			if failing < 4 {
				t.Errorf("the broken setup meets the goal on %d of %d other seeds: not clearly broken", OtherSeeds-failing, OtherSeeds)
			}
			ref, err := m.Evaluate(m.Reference)
			if err != nil {
				t.Fatal(err)
			}
			if ref.Stars != 3 {
				t.Errorf("the reference answer earns %d stars (%+v), want 3", ref.Stars, ref)
			}
		})
	}
}

func TestMissionByNumber(t *testing.T) {
	for n := 1; n <= 9; n++ {
		m, err := MissionByNumber(n)
		if err != nil || m.Number != n {
			t.Errorf("MissionByNumber(%d) = %d, %v", n, m.Number, err)
		}
	}
	for _, n := range []int{0, 10} {
		if _, err := MissionByNumber(n); err == nil {
			t.Errorf("MissionByNumber(%d) did not fail", n)
		}
	}
}

func TestStarsNeedEfficiency(t *testing.T) {
	m, _ := MissionByNumber(2)
	fix := m.Broken
	fix.Routing = Fleet // sealed sessions: no 404 storm, but the routing was changed
	st, err := m.Evaluate(fix)
	if err != nil {
		t.Fatal(err)
	}
	if st.Stars != 2 || st.Efficient {
		t.Errorf("mcpfleet routing for the 404 storm earns %d stars (efficient %v), want 2", st.Stars, st.Efficient)
	}
}

func TestRunawayAgentMission(t *testing.T) {
	m, err := MissionByNumber(7)
	if err != nil {
		t.Fatal(err)
	}
	broken := MustRun(m.Broken)
	if x := broken.RunawayAdmittedRate / m.Broken.LimitRate; x < 2.7 || x > 3.3 {
		t.Errorf("three gateways with local limits let the agent through at %.2fx its limit, want about 3x", x)
	}
	if ref := MustRun(m.Reference); ref.RunawayAdmittedRate > 1.05*m.Reference.LimitRate {
		t.Errorf("the shared store lets the agent through at %.3f/s, over its %g/s limit", ref.RunawayAdmittedRate, m.Reference.LimitRate)
	}
	tests := []struct {
		name  string
		set   func(*Scenario)
		stars int
	}{
		{"one gateway is a single point of failure", func(s *Scenario) { s.Gateways = 1 }, 0},
		{"one gateway with the shared store too", func(s *Scenario) { s.Gateways, s.LimitStore = 1, SharedLimits }, 0},
		{"the agent turned off is no answer", func(s *Scenario) { s.Runaway = false }, 0},
		{"a limit raised until it binds no more is no answer", func(s *Scenario) { s.LimitRate = 30 }, 0},
		{"the shared store behind three gateways: one too many", func(s *Scenario) { s.LimitStore = SharedLimits }, 2},
		{"the limit divided by the gateways holds, locally", func(s *Scenario) { s.LimitRate = runawayLimit / 3 }, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := m.Broken
			tt.set(&s)
			st, err := m.Evaluate(s)
			if err != nil {
				t.Fatal(err)
			}
			if st.Stars != tt.stars {
				t.Errorf("%d stars (%+v), want %d", st.Stars, st, tt.stars)
			}
		})
	}
}

// Mission 9's cap must be held fleet-wide: the same max_inflight held by
// each gateway on its own lets three times it through, and without a
// queue the calls past the places fail.
func TestOverloadNeedsAFleetWideCapAndAQueue(t *testing.T) {
	m, _ := MissionByNumber(9)
	local := m.Reference
	local.LimitStore = LocalLimits
	noQueue := m.Reference
	noQueue.QueueTimeout = 0
	for name, s := range map[string]Scenario{"a cap per gateway": local, "no queue": noQueue} {
		st, err := m.Evaluate(s)
		if err != nil {
			t.Fatal(err)
		}
		if st.OnSeed {
			t.Errorf("%s meets the goal: %+v", name, st)
		}
	}
	r := MustRun(m.Reference)
	if r.CapacityWaits == 0 || r.CapacityRefused != 0 {
		t.Errorf("reference: %d waits, %d refused; want calls that waited and none refused", r.CapacityWaits, r.CapacityRefused)
	}
	if r := MustRun(noQueue); r.CapacityRefused == 0 || r.CapacityWaits != 0 {
		t.Errorf("no queue: %d refused, %d waits; want 503s and no waits", r.CapacityRefused, r.CapacityWaits)
	}
}

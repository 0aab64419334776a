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
	for n := 1; n <= 6; n++ {
		m, err := MissionByNumber(n)
		if err != nil || m.Number != n {
			t.Errorf("MissionByNumber(%d) = %d, %v", n, m.Number, err)
		}
	}
	for _, n := range []int{0, 7} {
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

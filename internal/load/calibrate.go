package load

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/mcpfleet/mcpfleet/internal/sim"
)

// Calibration is one mission setup run both ways: the simulator's
// prediction and a real compressed run of the same scenario.
type Calibration struct {
	Mission *sim.Mission `json:"mission"`
	// Setup is "broken" or "fixed" (the mission's reference answer).
	Setup string `json:"setup"`
	// Sim and Real are the two runs' figures.
	Sim  *sim.Result `json:"sim"`
	Real *Report     `json:"real"`
	// SimMet and RealMet are the mission's goal on each.
	SimMet  bool `json:"sim_goal_met"`
	RealMet bool `json:"real_goal_met"`
}

// Agree reports whether both runs reach the same verdict on the goal.
func (c *Calibration) Agree() bool { return c.SimMet == c.RealMet }

// Calibrate runs every mission of numbers (all when empty), its broken
// setup and its reference answer, in the simulator and for real as o
// says (o.Scenario is replaced by each setup, replicas included).
// progress, when set, gets a line as each run starts and ends.
func Calibrate(ctx context.Context, o Options, numbers []int, progress io.Writer) ([]Calibration, error) {
	if len(numbers) == 0 {
		for _, m := range sim.Missions() {
			numbers = append(numbers, m.Number)
		}
	}
	var out []Calibration
	for _, n := range numbers {
		m, err := sim.MissionByNumber(n)
		if err != nil {
			return out, err
		}
		for _, setup := range []string{"broken", "fixed"} {
			s := m.Broken
			if setup == "fixed" {
				s = m.Reference
			}
			predicted, err := sim.Run(s)
			if err != nil {
				return out, err
			}
			ro := o
			ro.Scenario = s
			ro.Speed = calibrationSpeed(o.Speed, &s)
			if progress != nil {
				fmt.Fprintf(progress, "calibrate: mission %d %s: %s\n", m.Number, setup, s.Describe())
			}
			rep, err := Run(ctx, &ro)
			if err != nil {
				return out, fmt.Errorf("mission %d %s: %w", m.Number, setup, err)
			}
			c := Calibration{Mission: &m, Setup: setup, Sim: predicted, Real: rep,
				SimMet: m.GoalMet(predicted), RealMet: m.GoalMet(rep.Result)}
			if progress != nil {
				fmt.Fprintf(progress, "calibrate: mission %d %s: sim %s, real %s\n", m.Number, setup, met(c.SimMet), met(c.RealMet))
			}
			out = append(out, c)
		}
	}
	return out, nil
}

// maxCalibrationRate is the most calls per real second a calibration run
// sends (first sends; a refused call's re-sends come on top): above it two
// cores are out of CPU, and the run measures the machine, not the fleet.
const maxCalibrationRate = 100

// calibrationSpeed is speed, or less for a scenario whose calls would
// arrive faster than maxCalibrationRate per real second (mission 7's
// runaway agent).
func calibrationSpeed(speed float64, s *sim.Scenario) float64 {
	if speed == 0 {
		speed = 20
	}
	if r := s.TotalRate(); r*speed > maxCalibrationRate {
		speed = max(1, math.Floor(maxCalibrationRate/r))
	}
	return speed
}

// WriteCalibration prints the runs as a Markdown table: the figures each
// mission's goal reads, sim then real, and the verdicts.
func WriteCalibration(w io.Writer, cs []Calibration) error {
	ew := &errWriter{w: w}
	fmt.Fprintln(ew, "| # | setup | speed | calls (sim / real) | failed | idle cuts | calls with a 404 | killed | duplicate mutations | p95 s | runaway admitted /s | 429s to others | goal: sim / real |")
	fmt.Fprintln(ew, "|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for i := range cs {
		c := &cs[i]
		s, r := c.Sim, c.Real.Result
		pair := func(a, b any) string { return fmt.Sprintf("%v / %v", a, b) }
		pct := func(x *sim.Result) string {
			if x.Issued == 0 {
				return "0"
			}
			return fmt.Sprintf("%d (%.1f%%)", x.CallsWith404, 100*float64(x.CallsWith404)/float64(x.Issued))
		}
		verdict := met(c.SimMet) + " / " + met(c.RealMet)
		if !c.Agree() {
			verdict = "**" + verdict + "**"
		}
		fmt.Fprintf(ew, "| %d | %s | %gx | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			c.Mission.Number, c.Setup, c.Real.Run.Speed, pair(s.Issued, r.Issued), pair(s.Failed, r.Failed), pair(s.IdleCuts, r.IdleCuts),
			pct(s)+" / "+pct(r), pair(s.Killed, r.Killed), pair(s.DuplicateMutations, r.DuplicateMutations),
			pair(s.P95, r.P95), pair(s.RunawayAdmittedRate, r.RunawayAdmittedRate), pair(s.RefusedOthers, r.RefusedOthers),
			strings.ReplaceAll(verdict, "goal ", ""))
	}
	return ew.err
}

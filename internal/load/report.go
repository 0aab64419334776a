package load

import (
	"fmt"
	"io"

	"github.com/mcpfleet/mcpfleet/internal/sim"
)

// WriteComparison prints a real run beside the simulator's prediction for
// the same scenario, the mission's verdict on each when there is one,
// where the CPU went and the run's notes.
func WriteComparison(w io.Writer, rep *Report, predicted *sim.Result, m *sim.Mission) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "%s\n", rep.Scenario.Describe())
	fmt.Fprintf(ew, "real run: %s, speed %gx (model seconds per real second), %.1f s of wall time\n\n", rep.Run.URL, rep.Run.Speed, rep.Run.WallSeconds)
	if ew.err != nil {
		return ew.err
	}
	if err := sim.WriteTable(w, []string{"sim", "real"}, []*sim.Result{predicted, rep.Result}); err != nil {
		return err
	}
	if m != nil {
		fmt.Fprintf(ew, "\nmission %d: %s\n  goal: %s\n  sim: %s; real: %s\n", m.Number, m.Name, m.Goal, met(m.GoalMet(predicted)), met(m.GoalMet(rep.Result)))
	}
	if rep.Run.CPU != nil {
		fmt.Fprintln(ew)
		if err := rep.Run.CPU.WriteText(ew); err != nil {
			return err
		}
	}
	for _, n := range rep.Run.Notes {
		fmt.Fprintf(ew, "note: %s\n", n)
	}
	return ew.err
}

func met(ok bool) string {
	if ok {
		return "goal met"
	}
	return "goal missed"
}

// errWriter keeps the first write error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

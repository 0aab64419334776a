package bottleneck

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
)

// RoleTotal is the CPU of every process of one role.
type RoleTotal struct {
	Role         string
	CPUCores     float64 // share of one core, as Process.CPUCores
	MachineShare float64 // share of the machine
}

// Roles sums the processes by role, busiest first.
func (r Report) Roles() []RoleTotal {
	var totals []RoleTotal
	for _, p := range r.Processes {
		i := slices.IndexFunc(totals, func(t RoleTotal) bool { return t.Role == p.Role })
		if i < 0 {
			totals = append(totals, RoleTotal{Role: p.Role})
			i = len(totals) - 1
		}
		totals[i].CPUCores += p.CPUCores
		totals[i].MachineShare += p.MachineShare
	}
	for i := range totals {
		totals[i].CPUCores = round3(totals[i].CPUCores)
		totals[i].MachineShare = round3(totals[i].MachineShare)
	}
	slices.SortFunc(totals, func(a, b RoleTotal) int {
		if c := cmp.Compare(b.CPUCores, a.CPUCores); c != 0 {
			return c
		}
		return cmp.Compare(a.Role, b.Role)
	})
	return totals
}

// WriteText writes the report for a terminal: a table of the processes
// (percent of one core, percent of the machine), the role totals, the
// machine, and the verdict.
func (r Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "process\trole\t% of a core\t% of machine")
	for _, p := range r.Processes {
		name := p.Name
		if p.Gone {
			name += " (gone)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.1f\n", name, p.Role, p.CPUCores*100, p.MachineShare*100)
	}
	for _, t := range r.Roles() {
		fmt.Fprintf(tw, "all\t%s\t%.1f\t%.1f\n", t.Role, t.CPUCores*100, t.MachineShare*100)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	steal := ""
	if r.MachineSteal > 0 {
		steal = fmt.Sprintf(" (%.1f%% stolen by the hypervisor)", r.MachineSteal*100)
	}
	_, err := fmt.Fprintf(w, "machine: %.1f%% busy%s of %s over %.3g s\nverdict: %s\n",
		r.MachineBusy*100, steal, plural(float64(r.Cores), "core"), r.Interval, r.Verdict.Text)
	return err
}

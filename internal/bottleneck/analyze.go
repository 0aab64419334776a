package bottleneck

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
)

// The thresholds of the verdict, as shares (0.90 is 90%).
const (
	// SaturatedAt is the machine's busy share from which it is out of CPU.
	SaturatedAt = 0.90
	// PinnedAt is the share of its cores from which a process is pinned.
	PinnedAt = 0.90
)

// Report is where the CPU went between two snapshots. Its JSON names are
// fixed: other reports embed it.
type Report struct {
	// Cores is the machine's core count.
	Cores int `json:"cores"`
	// Interval is the wall time between the snapshots, in seconds.
	Interval float64 `json:"interval_s"`
	// MachineBusy is the share of the machine's CPU time spent on work.
	MachineBusy float64 `json:"machine_busy"`
	// MachineSteal is the share of the machine's CPU time its hypervisor
	// gave to other guests (inside MachineBusy): time no process here ran
	// although it could. 0 where unknown (under a cgroup quota).
	MachineSteal float64   `json:"machine_steal"`
	Processes    []Process `json:"processes"`
	Verdict      Verdict   `json:"verdict"`
}

// Process is the CPU one Name used, all its processes summed.
type Process struct {
	Name string `json:"name"`
	Role string `json:"role"`
	// PID is the latest process of the Name.
	PID int `json:"pid"`
	// CPUCores is CPU seconds per wall second: 0.97 is 97% of one core.
	CPUCores float64 `json:"cpu_cores"`
	// MachineShare is CPUCores over the machine's cores.
	MachineShare float64 `json:"machine_share"`
	// Gone says no process of the Name was running at the last snapshot.
	Gone bool `json:"-"`
}

// Verdict says what the figures mean for adding replicas.
type Verdict struct {
	// Pinned names the process at PinnedAt of its cores or more, the
	// busiest one by that share; "" if none, or if the machine is
	// saturated.
	Pinned string `json:"pinned"`
	// Saturated says the machine was busy SaturatedAt of the time or more.
	Saturated bool `json:"saturated"`
	// MoreReplicasHelp is true only when a replica is what is pinned.
	MoreReplicasHelp bool   `json:"more_replicas_help"`
	Text             string `json:"text"`
}

// usage is a Process with the cores it may use, for the verdict.
type usage struct {
	Process
	limit float64 // Target.Cores, or 1 when unknown
	start time.Duration
}

// Analyze says where the CPU went from first to last, two snapshots of one
// Sampler, on a machine of cores cores (below 1 counts as 1). The CPU of a
// process seen in both is its difference; of one seen only in last, all of
// it if it started after first, else what it used since it was first seen.
func Analyze(first, last Snapshot, cores int) Report {
	cores = max(cores, 1)
	wall := last.At.Sub(first.At).Seconds()
	r := Report{Cores: cores, Interval: round3(wall), Processes: []Process{}}
	if wall <= 0 {
		r.Verdict.Text = "no time passed between the samples: nothing was measured"
		return r
	}
	r.MachineBusy = round3(busyShare(first.Machine, last.Machine))
	r.MachineSteal = round3(min(stealShare(first.Machine, last.Machine), r.MachineBusy))
	us := usages(first, last, wall, cores)
	for _, u := range us {
		r.Processes = append(r.Processes, u.Process)
	}
	r.Verdict = verdict(us, r.MachineBusy, r.MachineSteal, cores)
	return r
}

// Peak analyzes each consecutive pair of snapshots and returns the report
// of the busiest interval for the machine, the earliest of equals.
func Peak(snaps []Snapshot, cores int) Report {
	if len(snaps) < 2 {
		return Analyze(Snapshot{}, Snapshot{}, cores)
	}
	best := Analyze(snaps[0], snaps[1], cores)
	for i := 2; i < len(snaps); i++ {
		if r := Analyze(snaps[i-1], snaps[i], cores); r.MachineBusy > best.MachineBusy {
			best = r
		}
	}
	return best
}

// busyShare is the share of the machine's CPU time spent on work.
func busyShare(first, last Machine) float64 {
	total := last.Total - first.Total
	if total <= 0 {
		return 0
	}
	return min(max(float64(last.Busy-first.Busy)/float64(total), 0), 1)
}

// stealShare is the share of the machine's CPU time stolen by its
// hypervisor.
func stealShare(first, last Machine) float64 {
	total := last.Total - first.Total
	if total <= 0 {
		return 0
	}
	return min(max(float64(last.Steal-first.Steal)/float64(total), 0), 1)
}

type procKey struct {
	pid   int
	start time.Duration
}

// usages sums the CPU of each Name from first to last, busiest first.
func usages(first, last Snapshot, wall float64, cores int) []usage {
	before := make(map[procKey]Proc, len(first.Procs))
	for _, p := range first.Procs {
		before[procKey{p.PID, p.Start}] = p
	}
	byName := map[string]*usage{}
	var us []*usage
	for _, p := range last.Procs {
		u := byName[p.Name]
		if u == nil {
			u = &usage{Process: Process{Name: p.Name, Gone: true}, start: -1}
			byName[p.Name] = u
			us = append(us, u)
		}
		u.CPUCores += used(p, before, first.Uptime).Seconds()
		// The latest process of the Name speaks for it: a running one
		// before a gone one, then the one that started last.
		if (u.Gone && !p.Gone) || (u.Gone == p.Gone && p.Start > u.start) {
			u.Role, u.PID, u.Gone, u.start = p.Role, p.PID, p.Gone, p.Start
			u.limit = p.Cores
			if u.limit <= 0 {
				u.limit = 1
			}
		}
	}
	out := make([]usage, len(us))
	for i, u := range us {
		u.CPUCores = round3(u.CPUCores / wall)
		u.MachineShare = round3(u.CPUCores / float64(cores))
		out[i] = *u
	}
	slices.SortFunc(out, func(a, b usage) int {
		if c := cmp.Compare(b.CPUCores, a.CPUCores); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out
}

// used is the CPU time p used since the first snapshot.
func used(p Proc, before map[procKey]Proc, firstUptime time.Duration) time.Duration {
	base := p.Base
	if f, ok := before[procKey{p.PID, p.Start}]; ok {
		base = f.CPU
	} else if p.Start >= firstUptime {
		base = 0 // started after the first snapshot: all of its CPU is in
	}
	return max(p.CPU-base, 0)
}

// eps absorbs float rounding at the thresholds.
const eps = 1e-9

// verdict applies the rules: a saturated machine first, then the most
// pinned process, else neither. Steal shrinks every core alike: of a core
// a process gets at most 1-steal, so pinned is PinnedAt of that.
func verdict(us []usage, busy, steal float64, cores int) Verdict {
	machine := fmt.Sprintf("%d%% of %s", pct(busy), plural(float64(cores), "core"))
	if pct(steal) > 0 {
		machine += fmt.Sprintf(", %d%% of it taken by the hypervisor", pct(steal))
	}
	if busy >= SaturatedAt-eps {
		text := "the machine is out of CPU (" + machine + "): more replicas on this machine will not help"
		if len(us) > 0 {
			text += fmt.Sprintf("; the largest share is %s (%s, %d%%)", us[0].Name, us[0].Role, pct(us[0].MachineShare))
		}
		return Verdict{Saturated: true, Text: text}
	}
	if p, ok := mostPinned(us, steal); ok {
		of := "a core"
		if p.limit != 1 {
			of = "its " + plural(p.limit, "core")
		}
		return Verdict{
			Pinned:           p.Name,
			MoreReplicasHelp: p.Role == RoleReplica,
			Text: fmt.Sprintf("%s (%s) is pinned at %d%% of %s while the machine has CPU to spare (%s): %s",
				p.Name, p.Role, pct(p.CPUCores/p.limit), of, machine, advice(p.Role)),
		}
	}
	text := "nothing is pinned and the machine has CPU to spare: the limit is elsewhere (latency, slots, locks)"
	if len(us) > 0 {
		text += fmt.Sprintf("; the machine is at %s, the busiest process %s (%s) at %d%% of a core",
			machine, us[0].Name, us[0].Role, pct(us[0].CPUCores))
	}
	return Verdict{Text: text}
}

// mostPinned returns the process at PinnedAt of what its cores give it
// (their share the hypervisor left, 1-steal) or more with the highest share
// of them, the first by name of equals.
func mostPinned(us []usage, steal float64) (usage, bool) {
	var best usage
	found := false
	for _, u := range us {
		if u.CPUCores < PinnedAt*u.limit*(1-steal)-eps {
			continue
		}
		if !found || u.CPUCores/u.limit > best.CPUCores/best.limit ||
			(u.CPUCores/u.limit == best.CPUCores/best.limit && u.Name < best.Name) {
			best, found = u, true
		}
	}
	return best, found
}

// advice says what helps when a process of role is pinned.
func advice(role string) string {
	switch role {
	case RoleReplica:
		return "more replicas would help"
	case RoleGateway:
		return "more gateway processes would help; more replicas would not"
	case RoleLoadGenerator:
		return "the load generator is the bottleneck: the figures understate the fleet; more replicas would not help"
	case RoleStore:
		return "the store is the bottleneck: a faster or sharded store would help; more replicas would not"
	case RoleBalancer:
		return "the balancer is the bottleneck: more balancer processes or threads would help; more replicas would not"
	default:
		return "a process outside the fleet holds the core: more replicas would not help"
	}
}

// pct is a share in whole percent, rounded down so that a figure below a
// threshold never prints as one at it.
func pct(share float64) int { return int(math.Floor(share*100 + eps)) }

func plural(n float64, unit string) string {
	s := strconv.FormatFloat(n, 'f', -1, 64) + " " + unit
	if n != 1 {
		s += "s"
	}
	return s
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

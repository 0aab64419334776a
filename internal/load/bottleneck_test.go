package load

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/bottleneck"
	"github.com/mcpfleet/mcpfleet/internal/sim"
)

// throughputScenario is an open-loop load of rate calls/s for secs seconds
// through one mcpfleet gateway in front of replicas (2026-07-28, no
// injections), at speed 1: model time is real time.
func throughputScenario(replicas int, rate, secs float64) sim.Scenario {
	s := sim.Default()
	s.Protocol, s.Routing, s.Replicas = sim.Rev2026, sim.Fleet, replicas
	s.ArrivalRate, s.TrafficSeconds, s.Clients = rate, secs, 16
	s.DurationMedian, s.DurationSigma, s.DurationCap = 0.001, 0.1, 0.002
	s.MutateShare = 0
	s.IdleTimeout = 0
	s.Slots = 4
	return s
}

// throughput is calls completed per second over the run.
func throughput(r *Report) float64 { return float64(r.Completed) / r.EndSeconds }

func cpuOf(t *testing.T, r *Report) *CPUReport {
	t.Helper()
	if r.Run.CPU == nil {
		t.Fatal("no CPU report")
	}
	var b []byte
	w := &sliceWriter{&b}
	_ = r.Run.CPU.WriteText(w)
	t.Logf("%d replicas: %.1f calls/s\n%s", r.Scenario.Replicas, throughput(r), b)
	return r.Run.CPU
}

type sliceWriter struct{ b *[]byte }

func (w *sliceWriter) Write(p []byte) (int, error) { *w.b = append(*w.b, p...); return len(p), nil }

// TestBottleneckFinder holds the finder to what it must get right on any
// machine, in the two set-ups that decide whether replicas help: a
// CPU-heavy tool on single-core replicas, and fast replicas under a heavy
// load. Which process comes out busiest depends on the machine's relative
// speeds (the load generator, the gateway and a fast replica can each be
// it), so the test asserts the verdict against the run's own samples, and
// the verdict's advice against what a second replica really does:
//   - the verdict follows the rules from the figures it reports (a
//     saturated machine; else the process at 90% of its cores, named; else
//     nothing pinned, the busiest process named);
//   - "more replicas would help" only when a replica is pinned, and then a
//     second replica raises throughput at least 1.3x;
//   - "more replicas would not help" (a saturated machine, or another
//     process pinned) and a second replica adds less than 1.2x;
//   - with nothing pinned the finder says the limit is elsewhere and makes
//     no claim about replicas: a replica bound by its latency rather than
//     its CPU may gain from a second one (a run here gained 1.5x with the
//     replica at 42% of a core), so the ratio is logged, not judged.
//
// A CPU-bound single-core replica offered 1.6 cores of work must be pinned
// wherever it gets its core: at 90% of what the core gives, which on a VM
// is less by the hypervisor's steal (on a 2-vCPU VM the replica got 82% of
// its core in runs where the machine showed 18% busy beyond every process
// watched, and 96-97% in runs without steal). When the machine
// is saturated instead (another process holds a core), the test says so
// and skips what it cannot judge.
func TestBottleneckFinder(t *testing.T) {
	if testing.Short() {
		t.Skip("starts fleets")
	}
	bin := mcpfleetBinary(t)
	t.Run("cpu-heavy tool", func(t *testing.T) {
		// 40 ms of CPU a call on one core, one call at a time (as a
		// single-threaded server runs CPU-bound work): 25 calls/s per
		// replica, offered 40.
		heavy := func(replicas int) sim.Scenario {
			s := throughputScenario(replicas, 40, 4)
			s.Slots = 1
			return s
		}
		cores := coresOf(1, runtime.GOMAXPROCS(0))
		one := fleetRun(t, bin, heavy(1), 1, 40)
		c := cpuOf(t, one)
		checkVerdict(t, c, cores)
		if c.Verdict.Saturated {
			t.Skipf("the machine was saturated (%.0f%% busy) with one replica: whether the replica is pinned cannot be judged here; %s", c.MachineBusy*100, report(one))
		}
		// Other work on the machine (beside the steal) takes the core.
		if others := (outsideShare(c) - c.MachineSteal) * float64(c.Cores); c.Verdict.Pinned == "" && others > 0.2 {
			t.Skipf("work this run does not watch used %.2f cores beside the fleet: too busy to judge whether the replica is pinned; %s", others, report(one))
		}
		if c.Verdict.Pinned != "replica-1" || !c.Verdict.MoreReplicasHelp {
			t.Fatalf("verdict %+v, want replica-1 pinned and more replicas helping: a single-core replica offered 1.6 cores of work and the machine not saturated; %s", c.Verdict, report(one))
		}
		two := fleetRun(t, bin, heavy(2), 1, 40)
		checkVerdict(t, cpuOf(t, two), cores)
		checkAdvice(t, one, two)
	})
	t.Run("fast replicas", func(t *testing.T) {
		// Replicas with every core and no slot limit; the load generator
		// (this process) on one core, as a single-threaded one would be.
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
		fast := func(replicas int) sim.Scenario {
			s := throughputScenario(replicas, 1500, 3)
			s.Slots = 1000
			s.Protocol = sim.Local2025
			s.IdleTimeout = 3600
			s.Clients = 64
			return s
		}
		cores := coresOf(runtime.NumCPU(), 1)
		one := fleetRunCores(t, bin, fast(1), runtime.NumCPU())
		checkVerdict(t, cpuOf(t, one), cores)
		two := fleetRunCores(t, bin, fast(2), runtime.NumCPU())
		checkVerdict(t, cpuOf(t, two), cores)
		checkAdvice(t, one, two)
	})
}

// coresOf is the cores each role of a run may use: replicas have replica
// cores, the load generator (this process) loadgen, the rest every core.
func coresOf(replica, loadgen int) func(bottleneck.Process) float64 {
	return func(p bottleneck.Process) float64 {
		switch p.Role {
		case bottleneck.RoleReplica:
			return float64(replica)
		case bottleneck.RoleLoadGenerator:
			return float64(loadgen)
		}
		return float64(runtime.NumCPU())
	}
}

// checkVerdict holds the verdict to the rules, applied to the figures the
// same report gives.
func checkVerdict(t *testing.T, c *CPUReport, cores func(bottleneck.Process) float64) {
	t.Helper()
	v := c.Verdict
	saturated := c.MachineBusy >= bottleneck.SaturatedAt
	if v.Saturated != saturated {
		t.Fatalf("verdict %+v with the machine %.1f%% busy: saturated must be %v", v, c.MachineBusy*100, saturated)
	}
	var pinned *bottleneck.Process
	for i, p := range c.Processes {
		// The hypervisor's steal takes the same share of every core.
		if p.CPUCores >= bottleneck.PinnedAt*cores(p)*(1-c.MachineSteal)-1e-9 && (pinned == nil || p.CPUCores/cores(p) > pinned.CPUCores/cores(*pinned)) {
			pinned = &c.Processes[i]
		}
	}
	switch {
	case saturated:
		if v.Pinned != "" || v.MoreReplicasHelp {
			t.Fatalf("verdict %+v on a saturated machine: nothing is pinned and more replicas on it cannot help", v)
		}
	case pinned != nil:
		if v.Pinned != pinned.Name || !strings.Contains(v.Text, pinned.Name) {
			t.Fatalf("verdict %+v: its own samples show %s (%s) at %.1f%% of %v cores, pinned", v, pinned.Name, pinned.Role, pinned.CPUCores*100, cores(*pinned))
		}
		if v.MoreReplicasHelp != (pinned.Role == bottleneck.RoleReplica) {
			t.Fatalf("verdict %+v with %s (%s) pinned: more replicas help exactly when a replica is pinned", v, pinned.Name, pinned.Role)
		}
	default:
		if v.Pinned != "" || v.MoreReplicasHelp {
			t.Fatalf("verdict %+v, but no process of the report is at %.0f%% of what its cores gave it (%.1f%% stolen)", v, bottleneck.PinnedAt*100, c.MachineSteal*100)
		}
		if len(c.Processes) == 0 || !strings.Contains(v.Text, c.Processes[0].Name) {
			t.Fatalf("verdict %q does not name the busiest process of its own samples (%+v)", v.Text, c.Processes)
		}
	}
}

// checkAdvice holds the one-replica run's advice to what the two-replica
// run measured: "more replicas would help" and throughput rises 1.3x or
// more; "would not help" (saturated, or a process other than a replica
// pinned) and it rises less than 1.2x; no claim (nothing pinned) and the
// ratio is only logged. A second replica cannot show its help on a machine
// with no CPU left for it: then the test skips, saying so.
func checkAdvice(t *testing.T, one, two *Report) {
	t.Helper()
	ratio := throughput(two) / throughput(one)
	figures := fmt.Sprintf("%.1f calls/s with 2 replicas, %.1f/s with 1 (%.2fx); with 1: %s; with 2: %s",
		throughput(two), throughput(one), ratio, report(one), report(two))
	if one.Run.CPU.Verdict.MoreReplicasHelp {
		if two.Run.CPU.Verdict.Saturated && ratio < 1.3 {
			t.Skipf("the machine was saturated with two replicas: the second one's help cannot be judged here; %s", figures)
		}
		if ratio < 1.3 {
			t.Fatalf("the finder said more replicas would help, but a second one added less than 1.3x: %s", figures)
		}
		return
	}
	v := one.Run.CPU.Verdict
	if c := one.Run.CPU; v.Saturated && (outsideShare(c)-c.MachineSteal)*float64(c.Cores) > 0.2 {
		// Saturated by work this run does not watch: whether a second
		// replica helps depends on whether that work is still there when
		// the second run comes.
		t.Skipf("the machine was saturated with one replica, %.2f cores of it by work this run does not watch: the second replica's help cannot be judged here; %s",
			(outsideShare(c)-c.MachineSteal)*float64(c.Cores), figures)
	}
	if !v.Saturated && v.Pinned == "" {
		t.Logf("nothing was pinned, so the finder made no claim about replicas; a second one gave %.2fx", ratio)
		return
	}
	if ratio >= 1.2 {
		t.Fatalf("the finder said more replicas would not help, but a second one added 1.2x or more: %s", figures)
	}
}

// report is a run's CPU figures on one line, for failure messages.
func report(r *Report) string {
	c := r.Run.CPU
	var b strings.Builder
	fmt.Fprintf(&b, "machine %.1f%% busy (%.1f%% stolen) of %d cores;", c.MachineBusy*100, c.MachineSteal*100, c.Cores)
	for _, p := range c.Processes {
		fmt.Fprintf(&b, " %s (%s) %.1f%% of a core,", p.Name, p.Role, p.CPUCores*100)
	}
	fmt.Fprintf(&b, " verdict: %s", c.Verdict.Text)
	return b.String()
}

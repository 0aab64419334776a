package load

import (
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

// TestBottleneckFinder names the pinned process in the two set-ups that
// decide whether replicas help. A CPU-heavy tool on single-core replicas:
// the replica is pinned while the machine has CPU to spare, the verdict
// says more replicas would help, and a second replica raises throughput.
// Fast replicas under a heavy load: the busiest process is the load
// generator or the gateway, not a replica, the verdict names it and says
// replicas would not help, and a second one does not raise throughput
// much.
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
		one := fleetRun(t, bin, heavy(1), 1, 40)
		c := cpuOf(t, one)
		if c.Verdict.Pinned != "replica-1" || !c.Verdict.MoreReplicasHelp {
			t.Fatalf("verdict %+v, want replica-1 pinned and more replicas helping", c.Verdict)
		}
		two := fleetRun(t, bin, heavy(2), 1, 40)
		cpuOf(t, two)
		if throughput(two) < 1.3*throughput(one) {
			t.Fatalf("throughput %.1f/s with 2 replicas, %.1f/s with 1: want at least 1.3x", throughput(two), throughput(one))
		}
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
		one := fleetRunCores(t, bin, fast(1), runtime.NumCPU())
		c := cpuOf(t, one)
		if c.Verdict.MoreReplicasHelp {
			t.Fatalf("verdict %+v: more replicas would not help here", c.Verdict)
		}
		if busiest := c.Processes[0]; busiest.Role != bottleneck.RoleLoadGenerator && busiest.Role != bottleneck.RoleGateway {
			t.Fatalf("the busiest process is %+v, want the load generator or the gateway", busiest)
		}
		if !strings.Contains(c.Verdict.Text, c.Processes[0].Name) {
			t.Fatalf("verdict %q does not name the busiest process %s", c.Verdict.Text, c.Processes[0].Name)
		}
		two := fleetRunCores(t, bin, fast(2), runtime.NumCPU())
		cpuOf(t, two)
		if throughput(two) > 1.2*throughput(one) {
			t.Fatalf("throughput %.1f/s with 2 replicas, %.1f/s with 1: a second fast replica should not add much", throughput(two), throughput(one))
		}
	})
}

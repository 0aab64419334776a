package load

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/admin"
	"github.com/mcpfleet/mcpfleet/internal/bottleneck"
	"github.com/mcpfleet/mcpfleet/internal/proc"
	"github.com/mcpfleet/mcpfleet/internal/testproc"
)

// idleCores is how many of the machine's cores were idle over d, from
// /proc/stat.
func idleCores(t *testing.T, d time.Duration) float64 {
	t.Helper()
	read := func() bottleneck.Machine {
		b, err := os.ReadFile("/proc/stat")
		if err != nil {
			t.Skipf("no /proc/stat to tell an idle machine by: %v", err)
		}
		m, err := bottleneck.ParseCPU(b)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	a := read()
	time.Sleep(d)
	b := read()
	total, busy := b.Total-a.Total, b.Busy-a.Busy
	if total <= 0 {
		return 0
	}
	return float64(total-busy) / float64(total) * float64(runtime.NumCPU())
}

// serveStdioBurn starts serve in front of n pooled stdio children of the
// test server, each on one core (GOMAXPROCS=1, as most stdio servers are
// single-threaded), and returns its MCP URL and the processes to watch
// (serve's and its children's) once every child is initialized.
func serveStdioBurn(t *testing.T, bin string, n int) (string, *proc.Process, []bottleneck.Target) {
	t.Helper()
	gw, adm := testproc.FreeAddr(t), testproc.FreeAddr(t)
	cfg := "listen: " + gw + "\nadmin: " + adm + "\nbalance: least-inflight\nlog_level: warn\nupstreams:\n" +
		"  - name: burn\n    stdio:\n      command: [" + bin + ", testserver, --stdio]\n" +
		"      env: {GOMAXPROCS: \"1\"}\n      processes: " + strconv.Itoa(n) + "\n"
	path := filepath.Join(t.TempDir(), "serve.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := proc.Start("serve", bin, "serve", "--config", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(10 * time.Second) })
	testproc.WaitReady(t, "http://"+gw+"/readyz")
	var kids []int
	for deadline := time.Now().Add(15 * time.Second); len(kids) < n; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d stdio children not all up within 15s:\n%s", n, p.Output())
		}
		kids = childPIDs(adm)
	}
	targets, err := bottleneck.ByPID(bottleneck.RoleGateway, p.PID())
	if err != nil {
		t.Fatal(err)
	}
	replicas, err := bottleneck.ByPID(bottleneck.RoleReplica, kids...)
	if err != nil {
		t.Fatal(err)
	}
	return "http://" + gw + "/mcp", p, append(targets, replicas...)
}

// childPIDs are the PIDs of the children the fleet view shows running.
func childPIDs(adm string) []int {
	resp, err := http.Get("http://" + adm + "/api/fleet")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var f admin.Fleet
	if json.NewDecoder(resp.Body).Decode(&f) != nil {
		return nil
	}
	var pids []int
	for _, r := range f.Replicas {
		if r.Process != nil && r.Process.PID > 0 {
			pids = append(pids, r.Process.PID)
		}
	}
	return pids
}

// TestStdioChildrenScale: a CPU-bound tool (50 ms of CPU a call) through
// two pooled stdio children of one core each gives at least 1.6x the calls
// per second of one child, on an idle 2-core machine: the gateway spreads
// stateless calls over its children, and a child's calls do not wait on
// another's. Each run offers 60 calls/s for 2 s, over the 20 one child can
// serve; a heavy call keeps the gateway's and the load generator's share
// of the two cores small. Two children measure 1.62x to 1.70x on an idle
// machine of two cores, where the rest of a core goes to the gateway, the
// load generator and the kernel; a pair of runs under 1.6x is run once
// more, and the better of the two pairs counts. A machine with less than
// 1.8 cores idle before, or where work outside the run took over 0.2 of a
// core during a run, cannot give two children a core each: the test says
// so and skips.
func TestStdioChildrenScale(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a gateway and its stdio children")
	}
	if runtime.NumCPU() < 2 {
		t.Skipf("%d core: two children need two", runtime.NumCPU())
	}
	bin := mcpfleetBinary(t)
	if idle := idleCores(t, time.Second); idle < 1.8 {
		t.Skipf("the machine is busy: %.2f of its %d cores idle over a second before the runs, want 1.8", idle, runtime.NumCPU())
	}
	best := 0.0
	for attempt := 1; attempt <= 2 && best < 1.6; attempt++ {
		one, two := stdioRate(t, bin, 1), stdioRate(t, bin, 2)
		t.Logf("attempt %d: calls/s: one child %.1f, two %.1f: %.2fx", attempt, one, two, two/one)
		best = max(best, two/one)
	}
	if best < 1.6 {
		t.Errorf("two children served at best %.2fx the calls/s of one, want at least 1.6x", best)
	}
}

// stdioRate is the calls per second n children serve the burn tool; the
// test skips when work outside the run took a fifth of a core.
func stdioRate(t *testing.T, bin string, n int) float64 {
	t.Helper()
	url, p, targets := serveStdioBurn(t, bin, n)
	rep := runFor(t, &Options{Scenario: throughputScenario(n, 60, 2), Speed: 1, URL: url, Burn: 50, Watch: targets})
	p.Stop(10 * time.Second)
	if rep.Completed != rep.Issued {
		t.Fatalf("%d children: %d of %d calls completed", n, rep.Completed, rep.Issued)
	}
	c := cpuOf(t, rep)
	if others := (outsideShare(c) - c.MachineSteal) * float64(c.Cores); others > 0.2 {
		t.Skipf("work outside the run used %.2f cores while %d children served: too busy to judge; %.1f calls/s", others, n, throughput(rep))
	}
	return throughput(rep)
}

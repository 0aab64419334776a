package bottleneck

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// childEnv makes the test binary a child process of the real tests: "spin"
// keeps one core busy, "idle" waits; both say "ready" and stop when their
// stdin closes (or after a minute, whatever happens to the test).
const childEnv = "BOTTLENECK_TEST_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "spin":
		runtime.GOMAXPROCS(1)
		var done atomic.Bool
		go func() { _, _ = io.Copy(io.Discard, os.Stdin); done.Store(true) }()
		os.Stdout.WriteString("ready\n")
		deadline := time.Now().Add(time.Minute)
		for n := 0; !done.Load(); n++ {
			if n%1_000_000 == 0 && time.Now().After(deadline) {
				break
			}
		}
		os.Exit(0)
	case "idle":
		os.Stdout.WriteString("ready\n")
		go func() { time.Sleep(time.Minute); os.Exit(0) }()
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// child is a running child process of the test binary.
type child struct {
	cmd   *exec.Cmd
	stdin io.Closer
}

// startChild starts the test binary as a child of kind, args added to its
// command line, and returns once it has said it is ready.
func startChild(t *testing.T, kind string, args ...string) child {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), childEnv+"="+kind)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := child{cmd: cmd, stdin: stdin}
	t.Cleanup(func() { c.stop() })
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("%s child said %q, %v", kind, line, err)
	}
	return c
}

// stop closes the child's stdin and waits for it to exit.
func (c child) stop() {
	c.stdin.Close()
	_ = c.cmd.Wait()
}

func skipUnlessLinux(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc, which is Linux's")
	}
}

// TestSpinningProcessIsPinned samples this machine: a child spinning on one
// core uses about one core and is named pinned, an idle one about none.
// When others load the machine to saturation the verdict must say so
// instead.
func TestSpinningProcessIsPinned(t *testing.T) {
	skipUnlessLinux(t)
	spin, idle := startChild(t, "spin"), startChild(t, "idle")
	s := New(nil)
	s.Add(Target{Name: "spin", Role: RoleReplica, PID: spin.cmd.Process.Pid, Cores: 1},
		Target{Name: "idle", Role: RoleReplica, PID: idle.cmd.Process.Pid, Cores: 1}, Self())
	first := sample(t, s)
	time.Sleep(1500 * time.Millisecond) // the interval measured, not a wait for an event
	last := sample(t, s)
	r := Analyze(first, last, s.Cores())
	t.Logf("%+v", r)

	byName := map[string]Process{}
	for _, p := range r.Processes {
		byName[p.Name] = p
	}
	if got := byName["idle"].CPUCores; got > 0.1 {
		t.Errorf("the idle child used %.3f cores, want about none", got)
	}
	got := byName["spin"].CPUCores
	if r.Verdict.Saturated {
		t.Logf("the machine was saturated (%.0f%%), by other work too: the spinner's core is not checked", r.MachineBusy*100)
		if got <= 0 || got > 1.1 {
			t.Errorf("the spinning child used %.3f cores, want some and at most 1.1", got)
		}
		return
	}
	if got > 1.1 {
		t.Errorf("the spinning child used %.3f cores, want about one (at most 1.1)", got)
	}
	// Below saturation the spinner may still get less than a core when
	// other work shares the machine with it (the scheduler splits the
	// cores between runnable processes; a cgroup quota throttles them
	// all): that is a busy machine, not a wrong measure. On a machine
	// otherwise about idle it must be pinned.
	others := r.MachineBusy*float64(r.Cores) - got - byName["idle"].CPUCores
	if got < PinnedAt {
		if others > 0.2 {
			t.Skipf("the spinner got %.3f cores while other work used %.3f of the machine's %d (%.0f%% busy): too busy to judge whether it is pinned", got, others, r.Cores, r.MachineBusy*100)
		}
		t.Errorf("the spinning child used %.3f cores on a machine otherwise about idle (others %.3f cores), want about one (%.1f to 1.1)", got, others, PinnedAt)
	}
	if r.Verdict.Pinned != "spin" || !r.Verdict.MoreReplicasHelp {
		t.Errorf("verdict %+v, want spin pinned and more replicas helping", r.Verdict)
	}

	spin.stop()
	for _, p := range sample(t, s).Procs {
		if p.Name == "spin" && !p.Gone {
			t.Errorf("the spinner has exited, yet %+v", p)
		}
	}
}

// TestMatchFindsAProcessByItsCommandLine: Match finds a child by a word on
// its command line, and ByPID names it by its comm.
func TestMatchFindsAProcessByItsCommandLine(t *testing.T) {
	skipUnlessLinux(t)
	word := "bottleneck-match-" + time.Now().Format("150405.000000000")
	c := startChild(t, "idle", word)
	pids, err := Match(word)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{c.cmd.Process.Pid}; !slices.Equal(pids, want) {
		t.Fatalf("Match = %v, want %v", pids, want)
	}
	targets, err := ByPID(RoleReplica, pids...)
	if err != nil {
		t.Fatal(err)
	}
	suffix := "/" + strconv.Itoa(pids[0])
	if len(targets) != 1 || targets[0].Role != RoleReplica || !strings.HasSuffix(targets[0].Name, suffix) || targets[0].Name == suffix {
		t.Errorf("ByPID = %+v, want one replica named by its comm and PID", targets)
	}
	c.stop()
	if _, err := ByPID(RoleReplica, c.cmd.Process.Pid); err == nil {
		t.Error("ByPID accepted a process that has exited")
	}
	if _, err := Match(""); err == nil {
		t.Error("Match accepted an empty pattern")
	}
}

// TestParseStatReadsEveryProcessHere: the strict parsers accept what this
// machine's kernel writes, for every process and for /proc/stat.
func TestParseStatReadsEveryProcessHere(t *testing.T) {
	skipUnlessLinux(t)
	if _, err := readWith("/proc/stat", ParseCPU); err != nil {
		t.Error(err)
	}
	if _, err := readWith("/proc/uptime", parseUptime); err != nil {
		t.Error(err)
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited since
		}
		if _, err := ParseStat(data); err != nil {
			t.Errorf("%s: %v", data, err)
		}
		n++
	}
	if n == 0 {
		t.Error("no process read")
	}
}

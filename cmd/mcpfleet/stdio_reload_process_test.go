package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testproc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rollConfig is a gateway of two stdio test servers started through
// sh -c, their whoami the child's name and gen; drain bounds the old
// children's drain.
func rollConfig(gw, tag, gen, extra string) string {
	return `listen: ` + gw + `
secret_file: SECRET
balance: round-robin
grace: 5s
health_check: {interval: 200ms, timeout: 200ms}
upstreams:
  - name: kid
    stdio:
      command: [sh, -c, 'exec "$0" testserver --stdio --name "$CHILD.` + gen + `"', ` + os.Args[0] + `]
      env: {MCPFLEET_RUN_MAIN: "1", CHILD: "{child}", STDIO_TEST_TAG: ` + tag + `}
      processes: 2
      restart_backoff: 200ms..2s
` + extra
}

// groupsOf returns the process groups of the test's processes whose
// command line holds gen, by child name.
func groupsOf(t *testing.T, tag, gen string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for pid, name := range stdioTestChildren(t, tag) {
		cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if !strings.Contains(string(cmd), "."+gen) {
			continue
		}
		if pgid, err := syscall.Getpgid(pid); err == nil {
			out[name] = pgid
		}
	}
	return out
}

// groupAlive reports whether a process of group pgid runs, read from
// /proc (field 5 of stat), zombies aside.
func groupAlive(pgid int) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		_, rest, ok := strings.Cut(string(st), ") ")
		f := strings.Fields(rest)
		if ok && len(f) > 2 && f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			return true
		}
	}
	return false
}

func waitFor(t *testing.T, within time.Duration, what string, done func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); !done(); time.Sleep(25 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
	}
}

// TestStdioReloadRollsChildren: a SIGHUP that changes a stdio upstream's
// command replaces its children one by one. A config that fails
// validation changes nothing first. Sessions opened before keep their old
// child and answer; new sessions land on the new children; an old child
// stops once its last session ends, or when the grace is over, its whole
// process group (sh -c and its server) with it; after shutdown no process
// of the test remains. One process fewer then stops the child that leaves
// and leaves the other as it was.
func TestStdioReloadRollsChildren(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	tag := strconv.Itoa(os.Getpid()) + "-roll-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	gw, secret := testproc.FreeAddr(t), writeSecret(t)
	path := filepath.Join(t.TempDir(), "mcpfleet.yaml")
	write := func(y string) {
		if err := os.WriteFile(path, []byte(strings.Replace(y, "SECRET", secret, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(rollConfig(gw, tag, "g1", ""))
	logs := startLogged(t, "serve", "--config", path)
	testproc.WaitReady(t, "http://"+gw+"/readyz")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	before := map[string]*mcp.ClientSession{}
	waitFor(t, 10*time.Second, "sessions on both children", func() bool {
		cs := connectGW(ctx, t, gw, "2025-11-25")
		name := whoamiOf(ctx, t, cs)
		if prev := before[name]; prev != nil {
			prev.Close() // one session a child: the test ends each
		}
		before[name] = cs
		return before["kid-1.g1"] != nil && before["kid-2.g1"] != nil
	})
	old := groupsOf(t, tag, "g1")
	if len(old) != 2 {
		t.Fatalf("process groups of the first children: %v, want kid-1 and kid-2", old)
	}

	write(rollConfig(gw, tag, "g2", "      processes_typo: 3\n"))
	logs.cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, 10*time.Second, "the invalid config refused", func() bool { return strings.Contains(logs.String(), "reload refused") })
	if got := groupsOf(t, tag, "g2"); len(got) != 0 {
		t.Fatalf("a refused reload started children: %v", got)
	}

	write(rollConfig(gw, tag, "g2", ""))
	logs.cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, 20*time.Second, "both children replaced", func() bool {
		return strings.Count(logs.String(), "stdio child replaced") == 2
	})
	for name, s := range before {
		if got := whoamiOf(ctx, t, s); got != name {
			t.Errorf("a session opened before the reload on %s now answers %q", name, got)
		}
	}
	for range 4 {
		cs := connectGW(ctx, t, gw, "2025-11-25")
		if got := whoamiOf(ctx, t, cs); !strings.HasSuffix(got, ".g2") {
			t.Errorf("a session opened after the reload landed on %q, want a new child", got)
		}
		cs.Close()
	}
	if !groupAlive(old["kid-1"]) || !groupAlive(old["kid-2"]) {
		t.Fatal("an old child stopped while a session still held it")
	}
	before["kid-1.g1"].Close() // its last session ends: it stops
	waitFor(t, 3*time.Second, "kid-1's old process group gone once its session ended", func() bool { return !groupAlive(old["kid-1"]) })
	// kid-2's old session stays open: the grace (5s) ends its child.
	waitFor(t, 10*time.Second, "kid-2's old process group gone after the grace", func() bool { return !groupAlive(old["kid-2"]) })
	if got := groupsOf(t, tag, "g1"); len(got) != 0 {
		t.Errorf("processes of the old children remain: %v", got)
	}
	if _, err := before["kid-2.g1"].CallTool(ctx, &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}}); err == nil {
		t.Error("a session of a child stopped after the grace still answered")
	}

	// One process fewer: kid-2 leaves the fleet, and with no session it
	// stops at once; kid-1 runs on as it was.
	now := groupsOf(t, tag, "g2")
	write(strings.Replace(rollConfig(gw, tag, "g2", ""), "processes: 2", "processes: 1", 1))
	logs.cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, 10*time.Second, "kid-2's process group gone once it left the fleet", func() bool { return !groupAlive(now["kid-2"]) })
	if got := groupsOf(t, tag, "g2"); got["kid-1"] != now["kid-1"] || len(got) != 1 {
		t.Errorf("after kid-2 left, the children are %v, want kid-1 alone as it was (%d)", got, now["kid-1"])
	}
	for range 3 {
		if got := whoamiOf(ctx, t, connectGW(ctx, t, gw, "2025-11-25")); got != "kid-1.g2" {
			t.Errorf("a session after kid-2 left landed on %q", got)
		}
	}
	logs.cmd.Process.Signal(syscall.SIGTERM)
	waitFor(t, 15*time.Second, "the gateway's exit", func() bool { return len(stdioTestChildren(t, tag)) == 0 })
}

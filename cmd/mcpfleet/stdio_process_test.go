package main

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/admin"
	"github.com/mcpfleet/mcpfleet/internal/config"
	"github.com/mcpfleet/mcpfleet/internal/testproc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioTestChildren lists the processes whose environment names a child
// of the test (STDIO_TEST_TAG=tag), by pid and child name, read from /proc.
func stdioTestChildren(t *testing.T, tag string) map[int]string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc")
	}
	found := map[int]string{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !strings.Contains(string(env), "STDIO_TEST_TAG="+tag+"\x00") {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && strings.Contains(string(st), ") Z ") {
			continue // a zombie, reaped soon
		}
		for _, kv := range strings.Split(string(env), "\x00") {
			if v, ok := strings.CutPrefix(kv, "CHILD="); ok {
				found[pid] = v
			}
		}
	}
	return found
}

// startStdioServe starts serve with a stdio fleet of two test servers,
// each started through sh -c, and returns its address.
func startStdioServe(t *testing.T, tag string) (gw, adm string, stop func()) {
	t.Helper()
	return startStdioServeWith(t, tag, "      processes: 2\n")
}

// startStdioServeWith starts serve with a stdio fleet of test servers
// started through sh -c, its stdio keys beside command and env given as
// YAML, and returns its address.
func startStdioServeWith(t *testing.T, tag, keys string) (gw, adm string, stop func()) {
	t.Helper()
	dir := t.TempDir()
	gw, adm = testproc.FreeAddr(t), testproc.FreeAddr(t)
	cfg := `listen: ` + gw + `
admin: ` + adm + `
secret_file: ` + writeSecret(t) + `
balance: round-robin
health_check: {interval: 200ms, timeout: 200ms}
upstreams:
  - name: kid
    stdio:
      command: [sh, -c, 'exec "$0" testserver --stdio --name "$CHILD"', ` + os.Args[0] + `]
      env: {MCPFLEET_RUN_MAIN: "1", CHILD: "{child}", STDIO_TEST_TAG: ` + tag + `}
      restart_backoff: 200ms..2s
` + keys
	path := filepath.Join(dir, "mcpfleet.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	stop = startProcess(t, "serve", "--config", path)
	testproc.WaitReady(t, "http://"+gw+"/readyz")
	return gw, adm, stop
}

func connectGW(ctx context.Context, t *testing.T, gw, version string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + gw + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connecting (%s): %v", version, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func whoamiOf(ctx context.Context, t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
	if err != nil || len(res.Content) == 0 {
		t.Fatalf("whoami: %v, %v", res, err)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

// TestStdioFleetThroughServe: serve runs a stdio fleet (two children
// through sh -c, their server a grandchild); the official SDK client
// calls it in both eras; a child killed during an 8 s call answers the
// call with replica_lost within a second, comes back, and leaves the other
// child's session untouched; after shutdown no process of the test is
// left.
func TestStdioFleetThroughServe(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	tag := strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	gw, adm, stop := startStdioServe(t, tag)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	byChild := map[string]*mcp.ClientSession{}
	// Both children up (readiness needs one), each session on one.
	for end := time.Now().Add(10 * time.Second); len(byChild) < 2 && time.Now().Before(end); {
		cs := connectGW(ctx, t, gw, "2025-11-25")
		byChild[whoamiOf(ctx, t, cs)] = cs
		time.Sleep(20 * time.Millisecond)
	}
	if _, ok := byChild["kid-1"]; !ok || len(byChild) != 2 {
		t.Fatalf("sessions reached %v, want kid-1 and kid-2", byChild)
	}
	// A 2026-07-28 call goes to the stateless twin of a child, started
	// for it, whose {child} is its own name.
	if got := whoamiOf(ctx, t, connectGW(ctx, t, gw, "2026-07-28")); got != "kid-1-2026" && got != "kid-2-2026" {
		t.Errorf("a 2026-07-28 call answered %q, want a twin", got)
	} else if twin := fleetReplica(t, adm, strings.TrimSuffix(got, "-2026")).Process.StatelessChild; twin == nil || twin.Name != got || twin.State != "native" || twin.PID <= 0 {
		t.Errorf("fleet view of %s's twin: %+v", got, twin)
	}
	children := stdioTestChildren(t, tag)
	var victim int
	for pid, name := range children {
		if name == "kid-1" {
			if cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); strings.Contains(string(cmd), "testserver") {
				victim = pid
			}
		}
	}
	if victim == 0 {
		t.Fatalf("no kid-1 test server among %v", children)
	}
	var wg sync.WaitGroup
	var callErr error
	var answered time.Time
	wg.Go(func() {
		_, callErr = byChild["kid-1"].CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"seconds": 8}})
		answered = time.Now()
	})
	time.Sleep(500 * time.Millisecond)
	killed := time.Now()
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if callErr == nil || !strings.Contains(callErr.Error(), "went away") {
		t.Errorf("the call on the killed child: %v, want the replica_lost error", callErr)
	}
	if took := answered.Sub(killed); took > time.Second {
		t.Errorf("replica_lost came %v after the kill, want within 1s", took)
	}
	if got := whoamiOf(ctx, t, byChild["kid-2"]); got != "kid-2" {
		t.Errorf("kid-2's session answered %q after kid-1 died", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !reaches(ctx, gw, "kid-1") {
		if time.Now().After(deadline) {
			t.Fatal("kid-1 did not come back within 5s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	checkFleetProcess(t, adm, "kid-1", 1)
	stop()
	if left := stdioTestChildren(t, tag); len(left) > 0 {
		t.Errorf("after shutdown, processes of the test remain: %v", left)
		for pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// reaches reports whether a new session's whoami answers name.
func reaches(ctx context.Context, gw, name string) bool {
	c := mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + gw + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return false
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
	return err == nil && len(res.Content) > 0 && res.Content[0].(*mcp.TextContent).Text == name
}

func TestStdioFlag(t *testing.T) {
	for _, tt := range []struct {
		cmd       string
		processes int
		urls, pg  bool
		want      string // error text; "" for none
	}{
		{cmd: `npx -y "@modelcontextprotocol/server-memory"`, processes: 3},
		{cmd: "", pg: true, want: "--processes: only with --stdio"},
		{cmd: "srv", urls: true, want: "either --stdio or --upstream"},
		{cmd: "srv | tee log", want: "not run through a shell"},
	} {
		cfg := config.Default()
		err := stdioFlag(&cfg, tt.cmd, tt.processes, tt.urls, tt.pg)
		if tt.want != "" {
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%q: %v, want %q", tt.cmd, err, tt.want)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tt.cmd, err)
		}
		u := cfg.Upstreams[0]
		if len(cfg.Upstreams) != 1 || strings.Join(u.Stdio.Command, "|") != "npx|-y|@modelcontextprotocol/server-memory" || u.Stdio.Processes != 3 {
			t.Errorf("upstreams %+v", cfg.Upstreams)
		}
		if specs := upstreamSpecs(&cfg); len(specs) != 3 || specs[2].Name != "stdio-3" || specs[2].URL != "http://stdio-3.stdio.invalid/mcp" {
			t.Errorf("replicas %+v", specs)
		}
	}
}

// readFleet returns the fleet view at admin address adm.
func readFleet(t *testing.T, adm string) admin.Fleet {
	t.Helper()
	resp, err := http.Get("http://" + adm + "/api/fleet")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var f admin.Fleet
	if err := json.NewDecoder(resp.Body).Decode(&f); err != nil {
		t.Fatalf("/api/fleet: %v", err)
	}
	return f
}

// fleetReplica returns replica name of the fleet view at adm.
func fleetReplica(t *testing.T, adm, name string) admin.Replica {
	t.Helper()
	for _, r := range readFleet(t, adm).Replicas {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no replica %s in the fleet view", name)
	return admin.Replica{}
}

// checkFleetProcess checks the fleet view's process of child name.
func checkFleetProcess(t *testing.T, adm, name string, restarts int) {
	t.Helper()
	r := fleetReplica(t, adm, name)
	if p := r.Process; p == nil || p.PID <= 0 || p.Restarts != restarts || p.Started == nil {
		t.Errorf("fleet view of %s: process %+v, stderr %q; want a pid, %d restarts", name, p, r.Stderr, restarts)
	}
}

// TestPlanStdio: a reload replaces the children whose command,
// environment (an env file's content too), directory or limits changed,
// starts those of new names and removes those of names gone, by name; a
// change of processes alone adds or removes names, and the gateway's own
// timeouts replace nothing.
func TestPlanStdio(t *testing.T) {
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	kids := func(y string) []*stdioKid { return stdioKids(t, y) }
	names := func(ks []*stdioKid) (out []string) {
		for _, k := range ks {
			out = append(out, k.name())
		}
		return out
	}
	base := "upstreams: [{name: a, stdio: {command: [srv, x], env_files: {T: " + token + "}}}, {url: 'http://127.0.0.1:1/mcp'}]"
	running := kids(base)
	for _, tt := range []struct {
		name, y, before      string // before: written to the env file first
		add, replace, remove string
	}{
		{name: "the same", y: base},
		{name: "an HTTP upstream changed", y: strings.Replace(base, ":1/", ":2/", 1)},
		{name: "the gateway's grace", y: "grace: 1m\nwrite_timeout: 9s\n" + base},
		{name: "the command", y: strings.Replace(base, "srv, x", "srv, y", 1), replace: "a-1 a-2"},
		{name: "the env file's content", y: base, before: "two", replace: "a-1 a-2"},
		{name: "one more process", y: strings.Replace(base, "command:", "processes: 3, command:", 1), add: "a-3"},
		{name: "one process", y: strings.Replace(base, "command:", "processes: 1, command:", 1), remove: "a-2"},
		{name: "another upstream", y: strings.Replace(base, "name: a,", "name: b,", 1), add: "b-1 b-2", remove: "a-1 a-2"},
		{name: "no stateless twins", y: strings.Replace(base, "command:", "native_stateless: false, command:", 1), replace: "a-1 a-2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.WriteFile(token, []byte(cmp.Or(tt.before, "one")), 0o600); err != nil {
				t.Fatal(err)
			}
			p := planStdio(running, kids(tt.y))
			got := []string{strings.Join(names(p.add), " "), strings.Join(names(p.replace), " "), strings.Join(p.remove, " ")}
			if want := []string{tt.add, tt.replace, tt.remove}; !slices.Equal(got, want) {
				t.Errorf("add, replace, remove = %q, want %q", got, want)
			}
		})
	}
}

// stdioKids are the children of configuration y's stdio upstreams.
func stdioKids(t *testing.T, y string) []*stdioKid {
	t.Helper()
	c, err := config.Parse([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	var out []*stdioKid
	for i := range c.Upstreams {
		if !c.Upstreams[i].IsStdio() {
			continue
		}
		ks, err := kidSpecs(&c.Upstreams[i], &c, nil)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ks...)
	}
	return out
}

// TestSamePerSession: a reload keeps a per_session upstream as it is, or
// is refused.
func TestSamePerSession(t *testing.T) {
	kids := func(y string) []*stdioKid { return stdioKids(t, y) }
	pooled := "upstreams: [{name: a, stdio: {command: [srv]}}]"
	base := "upstreams: [{name: a, stdio: {command: [srv], per_session: true, max_sessions: 8}}]"
	for _, tt := range []struct {
		name, from, to string
		ok             bool
	}{
		{"the same", base, base, true},
		{"pooled, changed", pooled, strings.Replace(pooled, "[srv]", "[srv, x]", 1), true},
		{"max_sessions", base, strings.Replace(base, "8", "9", 1), false},
		{"the command", base, strings.Replace(base, "[srv]", "[srv, x]", 1), false},
		{"turned on", pooled, base, false},
		{"turned off", base, pooled, false},
		{"removed", base, "upstreams: [{url: 'http://127.0.0.1:1/mcp'}]", false},
	} {
		if err := samePerSession(kids(tt.from), kids(tt.to)); (err == nil) != tt.ok {
			t.Errorf("%s: error %v, want ok %v", tt.name, err, tt.ok)
		}
	}
}

// TestStdioSessionBinding: a session on a stdio child is bound to the
// caller that opened it, as on any replica: another caller's POST, GET and
// DELETE on its ID get 404 -32001, and its opener goes on.
func TestStdioSessionBinding(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	tag := strconv.Itoa(os.Getpid()) + "-b-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	gw, _, _ := startStdioServe(t, tag)
	alice, bob := "Bearer alice-secret-token", "Bearer bob-secret-token"
	sid := legacyInitialize(t, gw, alice)
	for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		if status, body := legacyRequest(t, gw, method, sid, bob); status != http.StatusNotFound || !strings.Contains(body, `"code":-32001`) {
			t.Errorf("bob's %s on alice's session: %d %s; want 404 -32001", method, status, body)
		}
	}
	if status, body := legacyRequest(t, gw, http.MethodPost, sid, alice); status != http.StatusOK || !strings.Contains(body, `"text":"kid-`) {
		t.Errorf("alice on her own session: %d %s", status, body)
	}
}

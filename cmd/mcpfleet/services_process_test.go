package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/store/redistest"
	"github.com/mcpfleet/mcpfleet/internal/testproc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A services test's fleet: three services, two by path and one by host,
// each in front of two testserver replicas of its own.
type servicesFleet struct {
	replicas map[string][]string // service -> replica names
	addrs    map[string]string   // replica name -> address
	config   func(listen, admin string, services ...string) string
}

// internalHost is the host the by-host service answers.
const internalHost = "internal.test"

// servicePath is where a service's MCP endpoint is at the gateway.
var servicePath = map[string]string{"github": "/github/mcp", "jira": "/jira/mcp", "internal": "/mcp"}

func startServicesFleet(t *testing.T, secret, redisURL string) *servicesFleet {
	t.Helper()
	f := &servicesFleet{replicas: map[string][]string{}, addrs: map[string]string{}}
	entries := map[string]string{}
	for _, svc := range []string{"github", "jira", "internal"} {
		var ups []string
		for i := 1; i <= 2; i++ {
			name := fmt.Sprintf("%s-%d", svc, i)
			addr := testproc.FreeAddr(t)
			startReplica(t, name, addr, "--resource-metadata")
			f.replicas[svc] = append(f.replicas[svc], name)
			f.addrs[name] = addr
			ups = append(ups, fmt.Sprintf("{name: %s, url: 'http://%s/mcp'}", name, addr))
		}
		entry := fmt.Sprintf("  - name: %s\n    upstreams: [%s]\n", svc, strings.Join(ups, ", "))
		switch svc {
		case "internal":
			entry += "    hosts: [" + internalHost + "]\n    default: true\n    limits: {rate: 1, burst: 5}\n"
		default:
			entry += "    path: " + servicePath[svc] + "\n"
		}
		entries[svc] = entry
	}
	f.config = func(listen, admin string, services ...string) string {
		var b strings.Builder
		fmt.Fprintf(&b, "listen: %s\nadmin: %s\nsecret_file: %s\nallow_any_host: true\n", listen, admin, secret)
		if redisURL != "" {
			fmt.Fprintf(&b, "redis_url: %s\nidempotency: redis\ntask_store: redis\nlimits: {store: redis}\n", redisURL)
		}
		b.WriteString("tools: {refresh: 0s}\nservices:\n")
		for _, s := range services {
			b.WriteString(entries[s])
		}
		return b.String()
	}
	return f
}

var whoamiText = regexp.MustCompile(`"text":"([^"]*)"`)

// serviceCall is a 2026-07-28 whoami through gw to a service: the status
// and the replica that answered ("" when none did).
func serviceCall(t *testing.T, gw, svc string, id int) (int, string) {
	t.Helper()
	hdr := map[string]string{"Authorization": fmt.Sprintf("Bearer caller-%d", id%7)}
	if svc == "internal" {
		hdr["Host"] = internalHost
	}
	resp, err := post2026(gw+servicePath[svc], "tools/call", "whoami", `"name":"whoami","arguments":{}`, id, hdr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if m := whoamiText.FindSubmatch(b); resp.StatusCode == http.StatusOK && m != nil {
		return resp.StatusCode, string(m[1])
	}
	return resp.StatusCode, ""
}

// hostTransport sends every request with Host host.
type hostTransport struct{ host string }

func (h hostTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Host = h.host
	return http.DefaultTransport.RoundTrip(r)
}

// serviceSession opens a 2025-11-25 session through gw to a service.
func serviceSession(t *testing.T, ctx context.Context, gw, svc string) *mcp.ClientSession {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: "http://" + gw + servicePath[svc]}
	if svc == "internal" {
		tr.HTTPClient = &http.Client{Transport: hostTransport{internalHost}}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "services-test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("%s: %v", svc, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// sessionStatus posts a tools/list on a sealed session to a path of gw
// and returns the status and body.
func sessionStatus(t *testing.T, gw, path, host, session string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+gw+path, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Mcp-Protocol-Version": "2025-11-25", "Mcp-Session-Id": session} {
		req.Header.Set(k, v)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestServicesBehindOneGateway: one serve with three services (two by
// path, one by host), two replicas each. 100 calls to each service (50
// of 2026-07-28, 50 on 2025-11-25 sessions) reach only its replicas; the
// by-host service's limits.rate refuses some while the others refuse
// none; a session minted through one service is 404 -32001 at another and
// still works at its own; the protected-resource documents go to the
// service their suffix names, byte for byte, the root one to the default
// service; a request no service claims is 404; /metrics has each service
// by label.
func TestServicesBehindOneGateway(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	t.Parallel()
	f := startServicesFleet(t, writeSecret(t), "")
	gw, adm := testproc.FreeAddr(t), testproc.FreeAddr(t)
	cfg := filepath.Join(t.TempDir(), "services.yaml")
	if err := os.WriteFile(cfg, []byte(f.config(gw, adm, "github", "jira", "internal")), 0o600); err != nil {
		t.Fatal(err)
	}
	startProcess(t, "serve", "--config", cfg)
	testproc.WaitReady(t, "http://"+gw+"/readyz")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	sessions := map[string]*mcp.ClientSession{}
	for _, svc := range []string{"github", "jira", "internal"} {
		seen, refused := map[string]int{}, 0
		for i := range 50 {
			code, who := serviceCall(t, gw, svc, i)
			switch {
			case code == http.StatusTooManyRequests:
				refused++
			case code != http.StatusOK || who == "":
				t.Fatalf("%s: call %d answered %d", svc, i, code)
			default:
				seen[who]++
			}
		}
		for i := range 5 {
			cs := serviceSession(t, ctx, gw, svc)
			sessions[svc] = cs
			for range 10 {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami"})
				if err != nil && svc == "internal" && strings.Contains(err.Error(), "Too Many Requests") {
					refused++ // the by-host service's rate limit
					continue
				}
				if err != nil || res.IsError {
					t.Fatalf("%s: session %d: %v %v", svc, i, res, err)
				}
				seen[res.Content[0].(*mcp.TextContent).Text]++
			}
		}
		for who := range seen {
			if !slices.Contains(f.replicas[svc], who) {
				t.Errorf("%s: a call reached %s, not one of its replicas %v (all: %v)", svc, who, f.replicas[svc], seen)
			}
		}
		if svc == "internal" && refused == 0 {
			t.Errorf("internal (limits.rate 1/s, burst 5): 100 calls in a burst and none refused")
		}
		if svc != "internal" && refused != 0 {
			t.Errorf("%s has no limits, yet %d of its calls were refused", svc, refused)
		}
		t.Logf("%s: %v, %d refused", svc, seen, refused)
	}

	// A session of github opens at no other service; at its own it works.
	id := sessions["github"].ID()
	for _, at := range []struct{ path, host string }{{"/jira/mcp", ""}, {"/mcp", internalHost}} {
		code, body := sessionStatus(t, gw, at.path, at.host, id)
		if code != http.StatusNotFound || !strings.Contains(body, "-32001") {
			t.Errorf("github's session at %s%s: %d %s, want 404 with -32001", at.host, at.path, code, body)
		}
	}
	if code, body := sessionStatus(t, gw, "/github/mcp", "", id); code != http.StatusOK {
		t.Errorf("github's session at its own service: %d %s", code, body)
	}

	// OAuth discovery: the suffix names the service; the root form goes
	// to the default one.
	for _, tc := range []struct{ path, host, svc string }{
		{"/.well-known/oauth-protected-resource/github/mcp", "", "github"},
		{"/.well-known/oauth-protected-resource/jira/mcp", "", "jira"},
		{"/.well-known/oauth-protected-resource/mcp", internalHost, "internal"},
		{"/.well-known/oauth-protected-resource", "", "internal"},
	} {
		for range 4 {
			req, _ := http.NewRequest(http.MethodGet, "http://"+gw+tc.path, nil)
			if tc.host != "" {
				req.Host = tc.host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var who string
			for _, r := range f.replicas[tc.svc] {
				if strings.Contains(string(b), `"mcpfleet_replica":"`+r+`"`) {
					who = r
				}
			}
			if resp.StatusCode != http.StatusOK || who == "" {
				t.Fatalf("%s (host %q): %d %s, want the document of a replica of %s", tc.path, tc.host, resp.StatusCode, b, tc.svc)
			}
			// Byte for byte: what that replica writes for the request the
			// gateway sends it (the replica's own address as Host).
			direct := replicaDocument(t, f, who, tc.path)
			if string(b) != direct {
				t.Errorf("%s: the gateway relayed %q, the replica wrote %q", tc.path, b, direct)
			}
		}
	}
	for _, path := range []string{"/other/mcp", "/.well-known/oauth-protected-resource/other/mcp", "/github/mcpx"} {
		resp, err := http.Get("http://" + gw + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s, no service's: %d, want 404", path, resp.StatusCode)
		}
	}
	// mcpfleet probe proves affinity per service: by its URL, or by --host.
	// One call at a time: the sessions' GET streams above hold places at
	// the replicas, and more in flight would let the load bound move a
	// caller (hash_min_load).
	for _, svc := range []string{"github", "internal"} {
		args := []string{"probe", "--url", "http://" + gw + servicePath[svc], "--identities", "10", "--requests", "3", "--concurrency", "1", "--expect", "sticky", "--json"}
		if svc == "internal" {
			args = append(args, "--host", internalHost)
		}
		code, out, errOut := runCmd(t, ctx, args...)
		var rep struct {
			Replicas []struct {
				Name string `json:"name"`
			} `json:"replicas"`
		}
		if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil || len(rep.Replicas) == 0 {
			t.Fatalf("probe of %s: exit %d, %v\n%s\n%s", svc, code, err, out, errOut)
		}
		for _, r := range rep.Replicas {
			if !slices.Contains(f.replicas[svc], r.Name) {
				t.Errorf("probe of %s reached %s", svc, r.Name)
			}
		}
	}
	// The fleet view: each service's at /services/<name>/, the default's
	// at / too.
	for path, svc := range map[string]string{"/services/jira/api/fleet": "jira", "/services/github/api/fleet": "github", "/api/fleet": "internal"} {
		resp, err := http.Get("http://" + adm + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for other, names := range f.replicas {
			for _, n := range names {
				if has := strings.Contains(string(b), `"`+n+`"`); has != (other == svc) || resp.StatusCode != http.StatusOK {
					t.Errorf("%s: %d, names %s: %v (want only %s's replicas)", path, resp.StatusCode, n, has, svc)
				}
			}
		}
	}
	resp, err := http.Get("http://" + adm + "/services/other/api/fleet")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("the fleet view of no service: %d, want 404", resp.StatusCode)
	}
	for _, svc := range []string{"github", "jira", "internal"} {
		if n := metricWith(t, adm, "mcpfleet_requests_total", `service="`+svc+`"`); n < 100 {
			t.Errorf("mcpfleet_requests_total{service=%q} = %v, want at least the 100 calls", svc, n)
		}
	}
}

// replicaDocument is what replica name answers for a GET of path.
func replicaDocument(t *testing.T, f *servicesFleet, name, path string) string {
	t.Helper()
	resp, err := http.Get("http://" + f.addrs[name] + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestServicesThroughGatewayRestartsAndReloads: three gateway processes
// sharing a secret and Redis serve the three services. A github session
// survives a restart of the gateway it was opened through, while jira is
// reloaded out of the other two gateways by SIGHUP: there jira is 404 and
// github and internal still answer, on their own replicas; the restarted
// gateway still serves jira.
func TestServicesThroughGatewayRestartsAndReloads(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	t.Parallel()
	redisURL := "redis://" + redistest.Start(t) + "/0"
	f := startServicesFleet(t, writeSecret(t), redisURL)
	dir := t.TempDir()
	type gwProc struct {
		addr, admin, cfg string
		cmd              *exec.Cmd
		logs             *lockedBuffer
	}
	start := func(g *gwProc) {
		g.cmd = exec.Command(os.Args[0], "serve", "--config", g.cfg)
		g.cmd.Env = append(os.Environ(), "MCPFLEET_RUN_MAIN=1")
		g.logs = &lockedBuffer{}
		g.cmd.Stderr = g.logs
		if err := g.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmd := g.cmd
		t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() })
		testproc.WaitReady(t, "http://"+g.addr+"/readyz")
	}
	gws := make([]*gwProc, 3)
	for i := range gws {
		g := &gwProc{addr: testproc.FreeAddr(t), admin: testproc.FreeAddr(t), cfg: filepath.Join(dir, fmt.Sprintf("gw%d.yaml", i))}
		if err := os.WriteFile(g.cfg, []byte(f.config(g.addr, g.admin, "github", "jira", "internal")), 0o600); err != nil {
			t.Fatal(err)
		}
		start(g)
		gws[i] = g
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs := serviceSession(t, ctx, gws[0].addr, "github")
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami"})
	if err != nil {
		t.Fatal(err)
	}
	home := res.Content[0].(*mcp.TextContent).Text

	// Restart gateway 0 while gateways 1 and 2 reload jira out.
	gws[0].cmd.Process.Signal(syscall.SIGTERM)
	gws[0].cmd.Wait()
	for _, g := range gws[1:] {
		if err := os.WriteFile(g.cfg, []byte(f.config(g.addr, g.admin, "github", "internal")), 0o600); err != nil {
			t.Fatal(err)
		}
		g.cmd.Process.Signal(syscall.SIGHUP)
	}
	start(gws[0])
	for _, g := range gws[1:] {
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if code, _ := serviceCall(t, g.addr, "jira", 1); code == http.StatusNotFound {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("gateway %s still serves jira 10 s after the reload; log:\n%s", g.addr, g.logs.String())
			}
		}
	}
	// The session goes on through the restarted gateway and both others.
	for i, g := range gws {
		code, body := sessionStatus(t, g.addr, "/github/mcp", "", cs.ID())
		if code != http.StatusOK {
			t.Fatalf("github's session through gateway %d after the restart and reloads: %d %s", i, code, body)
		}
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami"})
	if err != nil || res.Content[0].(*mcp.TextContent).Text != home {
		t.Fatalf("the session after the restart: %v %v, want its replica %s", res, err, home)
	}
	for i, g := range gws {
		for _, svc := range []string{"github", "internal"} {
			code, who := serviceCall(t, g.addr, svc, 3)
			if code != http.StatusOK || !slices.Contains(f.replicas[svc], who) {
				t.Errorf("gateway %d, %s: %d from %q", i, svc, code, who)
			}
		}
	}
	if code, who := serviceCall(t, gws[0].addr, "jira", 5); code != http.StatusOK || !slices.Contains(f.replicas["jira"], who) {
		t.Errorf("the restarted gateway, whose config keeps jira: %d from %q", code, who)
	}
	for _, g := range gws[1:] {
		if !strings.Contains(g.logs.String(), "service removed") && !strings.Contains(g.logs.String(), `"service":"jira"`) {
			t.Errorf("gateway %s logged nothing of jira's removal:\n%s", g.addr, g.logs.String())
		}
	}
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfleet/mcpfleet/internal/admin"
	"github.com/mcpfleet/mcpfleet/internal/testproc"
)

// adminFleet is testserver replicas as processes and gateways in front of
// them with their admin listeners.
type adminFleet struct {
	replicas map[string]string // name -> host:port
	stops    map[string]func() // name -> stop the replica
	gateways []string          // MCP listeners' host:port
	admins   []string          // admin listeners' http:// URLs
	token    string
}

// startAdminFleet starts replicas a, b and c and n gateways, each with an
// admin listener guarded by one token, health checks every 250 ms.
func startAdminFleet(t *testing.T, n int) *adminFleet {
	t.Helper()
	f := &adminFleet{replicas: map[string]string{}, stops: map[string]func(){}, token: "admin-token-0123456789abcdef"}
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "admin-token")
	if err := os.WriteFile(tokenFile, []byte(f.token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var ups strings.Builder
	for _, name := range []string{"a", "b", "c"} {
		addr := testproc.FreeAddr(t)
		f.stops[name] = startProcess(t, "testserver", "--listen", addr, "--name", name)
		testproc.WaitReady(t, "http://"+addr+"/health")
		f.replicas[name] = addr
		fmt.Fprintf(&ups, "  - {name: %s, url: 'http://%s/mcp'}\n", name, addr)
	}
	secret := writeSecret(t)
	for i := range n {
		gw, adm := testproc.FreeAddr(t), testproc.FreeAddr(t)
		cfg := fmt.Sprintf("listen: %s\nadmin: %s\nadmin_token_file: %s\nsecret_file: %s\nhealth_check: {interval: 250ms, timeout: 250ms}\nupstreams:\n%s",
			gw, adm, tokenFile, secret, ups.String())
		p := filepath.Join(dir, fmt.Sprintf("gw%d.yaml", i))
		if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		startProcess(t, "serve", "--config", p)
		testproc.WaitReady(t, "http://"+gw+"/readyz")
		f.gateways = append(f.gateways, gw)
		f.admins = append(f.admins, "http://"+adm)
	}
	return f
}

// fleetView reads and validates GET /api/fleet of admin URL u.
func (f *adminFleet) fleetView(t *testing.T, u string) admin.Fleet {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u+"/api/fleet", nil)
	req.Header.Set("Authorization", "Bearer "+f.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/fleet: %d %s", resp.StatusCode, b)
	}
	if err := admin.ValidateFleetJSON(b); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	var v admin.Fleet
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// whoamiAs asks gw which replica answers a 2026-07-28 call of the caller
// holding token.
func whoamiAs(t *testing.T, gw, token string) string {
	t.Helper()
	resp, err := post2026(gw, "tools/call", "whoami", `"name":"whoami","arguments":{}`, 1, map[string]string{"Authorization": "Bearer " + token})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, n := range []string{"a", "b", "c"} {
		if strings.Contains(string(b), `"text":"`+n+`"`) {
			return n
		}
	}
	t.Fatalf("whoami answered %d %s", resp.StatusCode, b)
	return ""
}

// legacySession opens a 2025-11-25 session through gw and returns it with
// the replica it lives on.
func legacySession(t *testing.T, ctx context.Context, gw string) (*mcp.ClientSession, string) {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "admin-test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + gw + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, sessionWhoami(t, ctx, cs)
}

func sessionWhoami(t *testing.T, ctx context.Context, cs *mcp.ClientSession) string {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami"})
	if err != nil {
		t.Fatal(err)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

// TestAdminPageInABrowser opens the admin page of a gateway in front of
// three testserver processes under load, in headless Chromium: three rows
// up; a slow call raises its replica's in-flight count within 2 s; a
// stopped replica turns down; the drain button turns a row draining, after
// which no new 2026-07-28 call or new session reaches that replica while a
// session already there keeps working; resume brings it back. GET
// /api/fleet validates against its schema in every one of these states.
func TestAdminPageInABrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes and a browser")
	}
	browser := testproc.StartBrowser(t, 1280, 520, 90*time.Second)
	f := startAdminFleet(t, 1)
	gw, adm := f.gateways[0], f.admins[0]
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	// Load: callers with their own tokens, a call every 20 ms, until the
	// test ends.
	loadCtx, stopLoad := context.WithCancel(ctx)
	var loadWG sync.WaitGroup
	defer func() { stopLoad(); loadWG.Wait() }()
	loadWG.Go(func() {
		for i := 0; loadCtx.Err() == nil; i++ {
			req, _ := http.NewRequestWithContext(loadCtx, http.MethodPost, "http://"+gw+"/mcp", strings.NewReader(
				`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`))
			for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
				"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "whoami", "Authorization": fmt.Sprintf("Bearer load-%d", i%40)} {
				req.Header.Set(k, v)
			}
			if resp, err := http.DefaultClient.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			select {
			case <-loadCtx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	})

	bctx := browser.Ctx
	run := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// waitFor polls a page expression until it is true.
	waitFor := func(what, expr string, within time.Duration) {
		t.Helper()
		if _, err := chromedp.Run(bctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(within))); err != nil {
			got, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`document.getElementById("rows").innerText`))
			t.Fatalf("%s within %v: %v; the table:\n%s", what, within, err, got)
		}
	}
	state := func(name string) string {
		return fmt.Sprintf(`(document.querySelector('tr[data-replica=%q] td.state span.badge') || {}).textContent`, name)
	}

	// The token comes once in the address and leaves it.
	run("loading the page", chromedp.Navigate(adm+"/?token="+f.token))
	waitFor("three rows, up", `document.querySelectorAll('#rows tr').length === 3 && [...document.querySelectorAll('#rows td.state span.badge')].every(s => s.textContent === "up")`, 10*time.Second)
	if href, err := chromedp.Run(bctx, chromedp.Evaluate[string](`location.href`)); err != nil || strings.Contains(href, f.token) {
		t.Fatalf("the address still holds the token: %q (%v)", href, err)
	}
	f.fleetView(t, adm)

	// A slow call: its replica's in-flight count rises within 2 s.
	slowToken := "slow-caller"
	slowOn := whoamiAs(t, gw, slowToken)
	slowDone := make(chan struct{})
	go func() {
		defer close(slowDone)
		body := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sleep","arguments":{"seconds":4},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+gw+"/mcp", strings.NewReader(body))
		for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
			"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "sleep", "Authorization": "Bearer " + slowToken} {
			req.Header.Set(k, v)
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	waitFor("the slow call in flight on "+slowOn, fmt.Sprintf(`parseInt(document.querySelector('tr[data-replica=%q] td.inflight').textContent) >= 1`, slowOn), 2*time.Second)
	if r := replicaNamed(t, f.fleetView(t, adm), slowOn); r.InFlight < 1 {
		t.Fatalf("/api/fleet: %+v, want the slow call in flight", r)
	}

	// The session's replica is the one drained; another one is stopped.
	cs, home := legacySession(t, ctx, gw)
	stopped := map[string]string{"a": "b", "b": "c", "c": "a"}[home]
	f.stops[stopped]()
	waitFor(stopped+" down", state(stopped)+` === "down"`, 10*time.Second)
	if r := replicaNamed(t, f.fleetView(t, adm), stopped); r.State != admin.StateDown || r.LastCheck == nil || r.LastCheck.Result != "fail" ||
		len(r.Checks) < 2 || r.Checks[0] != *r.LastCheck {
		t.Fatalf("/api/fleet for the stopped replica: %+v", r)
	}
	// Its row opens its detail, with the failed checks and their reasons.
	run("opening "+stopped, chromedp.Click(fmt.Sprintf(`tr.replica[data-replica=%q] td.name`, stopped)))
	waitFor(stopped+"'s detail", fmt.Sprintf(`[...document.querySelectorAll('tr.detail[data-replica=%q] .checks li')].some(li => li.textContent.includes("fail"))`, stopped), 5*time.Second)

	run("draining "+home, chromedp.Evaluate[chromedp.Void](`window.confirm = () => true`),
		chromedp.Click(fmt.Sprintf(`tr[data-replica=%q] button.drain`, home)))
	waitFor(home+" draining", state(home)+` === "draining"`, 5*time.Second)
	if r := replicaNamed(t, f.fleetView(t, adm), home); r.State != admin.StateDraining || !r.Held {
		t.Fatalf("/api/fleet for the drained replica: %+v", r)
	}
	if os.Getenv("MCPFLEET_ADMIN_SCREENSHOT") == "1" {
		time.Sleep(20 * time.Second) // for docs/admin.png: sparklines with some history
	}
	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	saveAdminScreenshot(t, png)
	for i := range 20 {
		if got := whoamiAs(t, gw, fmt.Sprintf("new-caller-%d", i)); got == home || got == stopped {
			t.Fatalf("a new 2026-07-28 call reached %s (%s drained by hand, %s stopped)", got, home, stopped)
		}
	}
	for range 3 {
		if _, got := legacySession(t, ctx, gw); got == home {
			t.Fatalf("a new session opened on %s, drained by hand", home)
		}
	}
	for range 3 {
		if got := sessionWhoami(t, ctx, cs); got != home {
			t.Fatalf("the session on %s moved to %s", home, got)
		}
	}

	run("resuming "+home, chromedp.Click(fmt.Sprintf(`tr[data-replica=%q] button.resume`, home)))
	waitFor(home+" up again", state(home)+` === "up"`, 5*time.Second)
	seen := map[string]bool{}
	for i := range 30 {
		seen[whoamiAs(t, gw, fmt.Sprintf("later-caller-%d", i))] = true
	}
	if !seen[home] {
		t.Fatalf("resumed, %s took none of 30 new callers (%v)", home, seen)
	}
	f.fleetView(t, adm)
	<-slowDone
	for _, e := range browser.ConsoleErrors() {
		t.Errorf("browser console: %s", e)
	}
}

func replicaNamed(t *testing.T, f admin.Fleet, name string) admin.Replica {
	t.Helper()
	for _, r := range f.Replicas {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no replica %s in %+v", name, f.Replicas)
	return admin.Replica{}
}

// saveAdminScreenshot keeps the page's picture in the test's temporary
// directory and, with MCPFLEET_ADMIN_SCREENSHOT=1, as docs/admin.png.
func saveAdminScreenshot(t *testing.T, png []byte) {
	t.Helper()
	paths := []string{filepath.Join(t.TempDir(), "admin.png")}
	if os.Getenv("MCPFLEET_ADMIN_SCREENSHOT") == "1" {
		paths = append(paths, filepath.Join("..", "..", "docs", "admin.png"))
	}
	for _, p := range paths {
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFleetCommandMergesGateways: `mcpfleet fleet --admin URL,URL,URL`
// prints one row per replica with each of three gateways' views; --drain
// drains a replica on all of them; a wrong token is 401 there and changes
// nothing.
func TestFleetCommandMergesGateways(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	f := startAdminFleet(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tokenFile := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tokenFile, []byte(f.token), 0o600)
	wrongFile := filepath.Join(t.TempDir(), "wrong")
	os.WriteFile(wrongFile, []byte("not-the-admin-token-at-all"), 0o600)
	urls := strings.Join(f.admins, ",")

	if code, _, stderr := runCmd(t, ctx, "fleet", "--admin", urls, "--token-file", wrongFile, "--drain", "b"); code != 1 || !strings.Contains(stderr, "401") {
		t.Fatalf("drain with a wrong token: exit %d, %s", code, stderr)
	}
	for _, u := range f.admins {
		if r := replicaNamed(t, f.fleetView(t, u), "b"); r.Held {
			t.Fatalf("%s: b held after a refused drain", u)
		}
	}

	code, out, stderr := runCmd(t, ctx, "fleet", "--admin", urls, "--token-file", tokenFile, "--drain", "b")
	if code != 0 {
		t.Fatalf("fleet --drain b: exit %d\n%s%s", code, out, stderr)
	}
	t.Logf("\n%s", out)
	for _, u := range f.admins {
		if !strings.Contains(out, u+": b drained") {
			t.Errorf("the output does not say b was drained on %s", u)
		}
		if r := replicaNamed(t, f.fleetView(t, u), "b"); !r.Held || r.State != admin.StateDraining {
			t.Errorf("%s: b is %+v, want drained by hand", u, r)
		}
	}
	var rows []string
	for _, l := range strings.Split(out, "\n") {
		if fs := strings.Fields(l); len(fs) > 0 && (fs[0] == "a" || fs[0] == "b" || fs[0] == "c") {
			rows = append(rows, l)
			// A name, then each gateway's state first in its group.
			want := "up"
			if fs[0] == "b" {
				want = "draining"
			}
			if n := strings.Count(l, want); n != 3 {
				t.Errorf("row %q: %q %d times, want once per gateway", l, want, n)
			}
		}
	}
	if len(rows) != 3 {
		t.Fatalf("%d replica rows, want 3:\n%s", len(rows), out)
	}
	for i, u := range f.admins {
		if !strings.Contains(out, fmt.Sprintf("gateway %d: %s", i+1, u)) {
			t.Errorf("gateway %d (%s) not named:\n%s", i+1, u, out)
		}
	}
	if code, out, stderr = runCmd(t, ctx, "fleet", "--admin", urls, "--token-file", tokenFile, "--resume", "b", "--json"); code != 0 {
		t.Fatalf("fleet --resume b --json: exit %d\n%s%s", code, out, stderr)
	}
	var views []admin.Fleet
	if err := json.Unmarshal([]byte(out[strings.Index(out, "["):]), &views); err != nil || len(views) != 3 {
		t.Fatalf("--json: %d views (%v)\n%s", len(views), err, out)
	}
	for _, v := range views {
		if r := replicaNamed(t, v, "b"); r.Held || r.State != admin.StateUp {
			t.Errorf("after --resume: b is %+v", r)
		}
	}
}

package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testproc"

	"github.com/mcpfleet/mcpfleet/internal/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The test binary doubles as mcpfleet: with MCPFLEET_RUN_MAIN=1 it runs the
// command line it was given, so tests can start real processes without a
// separate build.
func TestMain(m *testing.M) {
	if os.Getenv("MCPFLEET_RUN_MAIN") == "1" {
		ctx, stop := signalContext()
		defer stop()
		os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// startProcess runs "mcpfleet args..." as a real process and stops it with
// SIGTERM (then SIGKILL) at the end of the test or when stop is called.
func startProcess(t *testing.T, args ...string) (stop func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "MCPFLEET_RUN_MAIN=1")
	if testing.Verbose() {
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}
	t.Cleanup(stop)
	return stop
}

func writeSecret(t *testing.T) string {
	t.Helper()
	s, err := config.RandomSecret(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "secret.yaml")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := config.WriteSecretFile(f, s); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSessionsSurviveWithProcesses is the gateway-restart flow (ToolHive's
// "backend routing breaks after proxy runner restart") with real processes: two
// stateful testservers, one gateway; initialize and tools/list with the SDK
// client; kill the gateway and start another with the same secret on the
// same address: five tools/list on the same session all succeed. Then two
// gateway processes share the session.
func TestSessionsSurviveWithProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	secret := writeSecret(t)
	var ups []string
	for _, name := range []string{"a", "b"} {
		addr := testproc.FreeAddr(t)
		startProcess(t, "testserver", "--listen", addr, "--name", name, "--era", "2025")
		testproc.WaitReady(t, "http://"+addr+"/health")
		ups = append(ups, "--upstream", "http://"+addr+"/mcp")
	}
	gw := testproc.FreeAddr(t)
	serve := append([]string{"serve", "--listen", gw, "--secret-file", secret}, ups...)
	stopA := startProcess(t, serve...)
	testproc.WaitReady(t, "http://"+gw+"/readyz")

	c := mcp.NewClient(&mcp.Implementation{Name: "mcpfleet-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + gw + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	stopA()
	startProcess(t, serve...)
	testproc.WaitReady(t, "http://"+gw+"/readyz")
	for i := range 5 {
		if _, err := cs.ListTools(ctx, nil); err != nil {
			t.Fatalf("tools/list %d of 5 after the gateway restarted: %v", i+1, err)
		}
	}

	// A second gateway process with the same secret serves the same session.
	gw2 := testproc.FreeAddr(t)
	startProcess(t, append([]string{"serve", "--listen", gw2, "--secret-file", secret}, ups...)...)
	testproc.WaitReady(t, "http://"+gw2+"/readyz")
	for i := range 6 {
		url := "http://" + gw + "/mcp"
		if i%2 == 1 {
			url = "http://" + gw2 + "/mcp"
		}
		if code := postSession(t, url, cs.ID()); code != 200 {
			t.Fatalf("request %d via %s: status %d", i, url, code)
		}
	}
}

// postSession sends a legacy tools/list on a session and returns the status.
func postSession(t *testing.T, url, session string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":99,"method":"tools/list"}`))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Mcp-Protocol-Version": "2025-11-25", "Mcp-Session-Id": session} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestReloadOnHangup: a gateway process re-reads its config file on SIGHUP
// and routes to the new upstreams; a file that does not validate changes
// nothing.
func TestReloadOnHangup(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	var addrs []string
	for _, name := range []string{"old", "new"} {
		addr := testproc.FreeAddr(t)
		startProcess(t, "testserver", "--listen", addr, "--name", name)
		testproc.WaitReady(t, "http://"+addr+"/health")
		addrs = append(addrs, addr)
	}
	gw := testproc.FreeAddr(t)
	cfgPath := filepath.Join(t.TempDir(), "fleet.yaml")
	write := func(body string) {
		if err := os.WriteFile(cfgPath, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("listen: " + gw + "\nupstreams: [{name: old, url: 'http://" + addrs[0] + "/mcp'}]\n")
	cmd := exec.Command(os.Args[0], "serve", "--config", cfgPath)
	cmd.Env = append(os.Environ(), "MCPFLEET_RUN_MAIN=1")
	logs := &lockedBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		if t.Failed() {
			t.Logf("gateway log:\n%s", logs.String())
		}
	})
	testproc.WaitReady(t, "http://"+gw+"/readyz")
	if got := whoami(t, gw); got != "old" {
		t.Fatalf("before the reload: %s", got)
	}
	write("listen: " + gw + "\nupstreams: [{name: new, url: 'ftp://nowhere'}]\n") // invalid
	cmd.Process.Signal(syscall.SIGHUP)
	// Once the gateway has said it refused the reload, the old fleet must
	// still answer.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), "reload refused"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the gateway never said it refused the invalid reload")
		}
	}
	if got := whoami(t, gw); got != "old" {
		t.Fatalf("an invalid reload changed the fleet: %s", got)
	}
	write("listen: " + gw + "\nupstreams: [{name: new, url: 'http://" + addrs[1] + "/mcp'}]\n")
	cmd.Process.Signal(syscall.SIGHUP)
	deadline := time.Now().Add(5 * time.Second)
	for whoami(t, gw) != "new" {
		if time.Now().After(deadline) {
			t.Fatal("the reload never took effect")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// whoami asks the fleet behind gw which replica answers (2026-07-28).
func whoami(t *testing.T, gw string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+gw+"/mcp", strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "whoami"} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, n := range []string{"old", "new", "a", "b", "c"} {
		if strings.Contains(string(b), `"text":"`+n+`"`) {
			return n
		}
	}
	return string(b)
}

// post2026 posts one 2026-07-28 request of method to gw's MCP endpoint (gw
// an address, or an address and a path):
// params is the JSON members of its params besides _meta ("" for none),
// tool its Mcp-Name ("" for none), and hdr more headers.
func post2026(gw, method, tool, params string, id int, hdr map[string]string) (*http.Response, error) {
	if params != "" {
		params += ","
	}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, id, method, params)
	url := "http://" + gw
	if !strings.Contains(gw, "/") {
		url += "/mcp" // an address alone: the one service's endpoint
	}
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if tool != "" {
		req.Header.Set("Mcp-Name", tool)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	return http.DefaultClient.Do(req)
}

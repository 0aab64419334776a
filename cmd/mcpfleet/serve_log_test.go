package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testproc"
)

// TestServeLogReachesStderrByExit: serve's log goes through its buffered
// writer, whose drops /metrics counts, and every line logged, shutdown's
// included, is on stderr, whole, when serve returns.
func TestServeLogReachesStderrByExit(t *testing.T) {
	backend := testproc.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	backendDone := make(chan int)
	go func() {
		backendDone <- run(ctx, []string{"testserver", "--listen", backend, "--name", "a"}, io.Discard, io.Discard)
	}()
	defer func() { cancel(); <-backendDone }()
	addr, admin := testproc.FreeAddr(t), testproc.FreeAddr(t)
	sctx, stop := context.WithCancel(context.Background())
	defer stop()
	var errb lockedBuffer
	served := make(chan int)
	go func() {
		served <- run(sctx, []string{"serve", "--listen", addr, "--admin", admin, "--upstream", "http://" + backend + "/mcp"}, io.Discard, &errb)
	}()
	testproc.WaitReady(t, "http://"+addr+"/readyz")
	resp, err := http.Post("http://"+addr+"/mcp", "application/json",
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	resp, err = http.Get("http://" + admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(metrics), "\nmcpfleet_log_lines_dropped_total 0\n") {
		t.Errorf("/metrics lacks mcpfleet_log_lines_dropped_total 0")
	}
	stop()
	if code := <-served; code != 0 {
		t.Fatalf("serve exit %d: %s", code, errb.String())
	}
	seen := map[string]bool{}
	for l := range strings.Lines(errb.String()) {
		var m struct{ Msg string }
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("stderr line not JSON (%v): %q", err, l)
		}
		seen[m.Msg] = true
		// The access line, which the gateway puts together itself, as
		// slog's JSON handler would.
		if m.Msg == "request" && !strings.Contains(l, `,"level":"INFO","msg":"request","http_method":"POST","method":"ping","tool":"","era":"2025-11-25","replica":"`) {
			t.Errorf("access log line %q", l)
		}
	}
	for _, msg := range []string{"gateway listening", "request", "shutting down"} {
		if !seen[msg] {
			t.Errorf("stderr lacks %q:\n%s", msg, errb.String())
		}
	}
}

package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testproc"
)

func runCmd(t *testing.T, ctx context.Context, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb lockedBuffer
	code = run(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestUsageErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("upstreams: [{url: 'http://127.0.0.1:1/mcp'}]\nkeepalive: -5s\n"), 0o600)
	shortToken := filepath.Join(t.TempDir(), "short-token")
	os.WriteFile(shortToken, []byte("short\n"), 0o600)
	openToken := filepath.Join(t.TempDir(), "open-token")
	os.WriteFile(openToken, []byte("a-long-enough-admin-token\n"), 0o644)
	unknown := filepath.Join(t.TempDir(), "unknown.yaml")
	os.WriteFile(unknown, []byte("upstreams: [{url: 'http://127.0.0.1:1/mcp'}]\nlisten_addr: x\n"), 0o600)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no command", nil, 2, "usage"},
		{"unknown command", []string{"frobnicate"}, 2, "unknown command"},
		{"serve without upstreams", []string{"serve"}, 2, "upstreams"},
		{"serve bad upstream", []string{"serve", "--upstream", "ftp://x/"}, 2, "--upstream: url \"ftp://x/\": scheme must be http or https"},
		{"serve bad balance", []string{"serve", "--upstream", "http://127.0.0.1:1/", "--balance", "random"}, 2, "balance"},
		{"serve bad config value", []string{"serve", "--config", bad}, 2, "line 2: keepalive: must not be negative"},
		{"serve bad config value and a flag", []string{"serve", "--config", bad, "--listen", "127.0.0.1:0"}, 2, "serve: keepalive: must not be negative"},
		{"serve unknown config key", []string{"serve", "--config", unknown}, 2, "listen_addr"},
		{"serve missing config", []string{"serve", "--config", "/nonexistent.yaml"}, 2, "reading config"},
		{"serve stray argument", []string{"serve", "extra"}, 2, "unexpected argument"},
		{"testserver bad era", []string{"testserver", "--era", "1999"}, 2, "era"},
		{"demo too many replicas", []string{"demo", "--replicas", "40"}, 2, "replicas"},
		{"probe without url", []string{"probe"}, 2, "--url"},
		{"probe bad expect", []string{"probe", "--url", "http://127.0.0.1:1/mcp", "--expect", "x"}, 2, "expect"},
		{"load without a target", []string{"load"}, 2, "--url URL"},
		{"load with both targets", []string{"load", "--fleet", "3", "--url", "http://127.0.0.1:1/mcp"}, 2, "--url URL"},
		{"load off loopback", []string{"load", "--url", "http://192.0.2.1:80/mcp"}, 2, "loopback only"},
		{"load too many replicas", []string{"load", "--fleet", "13"}, 2, "--fleet"},
		{"load bad speed", []string{"load", "--url", "http://127.0.0.1:1/mcp", "--speed", "500"}, 2, "speed"},
		{"load too long", []string{"load", "--url", "http://127.0.0.1:1/mcp", "--speed", "1", "--traffic", "3600"}, 2, "over the limit"},
		{"load fixed without mission", []string{"load", "--url", "http://127.0.0.1:1/mcp", "--fixed"}, 2, "--fixed"},
		{"load calibrate without fleet", []string{"load", "--url", "http://127.0.0.1:1/mcp", "--calibrate", "all"}, 2, "--calibrate"},
		{"load calibrate bad mission", []string{"load", "--fleet", "3", "--calibrate", "10"}, 2, "--calibrate"},
		{"load bad pids", []string{"load", "--url", "http://127.0.0.1:1/mcp", "--pids", "api=x"}, 2, "--pids"},
		{"serve token without admin", []string{"serve", "--upstream", "http://127.0.0.1:1/mcp", "--admin-token-file", shortToken}, 2, "admin_token_file: has no effect without admin"},
		{"serve short admin token", []string{"serve", "--upstream", "http://127.0.0.1:1/mcp", "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0", "--admin-token-file", shortToken}, 2, "shorter than 16"},
		{"serve admin token others may read", []string{"serve", "--upstream", "http://127.0.0.1:1/mcp", "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0", "--admin-token-file", openToken}, 2, "admin_token_file"},
		{"fleet without admin", []string{"fleet"}, 2, "--admin"},
		{"fleet bad admin url", []string{"fleet", "--admin", "127.0.0.1:9090"}, 2, "want http(s)://host:port"},
		{"fleet drain and resume", []string{"fleet", "--admin", "http://127.0.0.1:1", "--drain", "a", "--resume", "a"}, 2, "one at a time"},
		{"fleet unreachable", []string{"fleet", "--admin", "http://127.0.0.1:1", "--timeout", "1s"}, 1, "could not be read"},
		{"chaos bad era", []string{"chaos", "--era", "1999"}, 2, "era"},
		{"chaos bad kill", []string{"chaos", "--kill", "gently"}, 2, "kill"},
		{"chaos roll gateways alone", []string{"chaos", "--roll", "gateways", "--gateways", "1"}, 2, "roll gateways"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCmd(t, context.Background(), tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want exit %d mentioning %q", code, stderr, tt.code, tt.want)
			}
		})
	}
}

// TestDemoServesAndStops runs the demo on a free port for a few seconds:
// it prints the gateway URL, the fleet answers through it, and it stops by
// itself.
func TestDemoServesAndStops(t *testing.T) {
	addr := testproc.FreeAddr(t)
	var code int
	var out, errb lockedBuffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		code = run(context.Background(), []string{"demo", "--listen", addr, "--for", "3s"}, &out, &errb)
	}()
	testproc.WaitReady(t, "http://"+addr+"/healthz")
	// The gateway answers before the demo has printed its addresses.
	for end := time.Now().Add(5 * time.Second); !strings.Contains(out.String(), "Ctrl-C") && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(out.String(), "http://"+addr+"/mcp") || !strings.Contains(out.String(), "curl") {
		t.Errorf("demo output lacks the URL or the client command:\n%s", out.String())
	}
	resp, err := http.DefaultClient.Do(whoamiRequest("http://" + addr + "/mcp"))
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	body.ReadFrom(resp.Body)
	resp.Body.Close()
	if !strings.Contains(body.String(), "replica-") {
		t.Errorf("whoami through the demo answered %q", body.String())
	}
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("demo did not stop after --for")
	}
	if code != 0 {
		t.Errorf("demo exit %d, stderr %s", code, errb.String())
	}
}

// TestServeShutsDownOnCancel starts serve against a testserver and stops it
// through its context, as SIGTERM does.
func TestServeShutsDownOnCancel(t *testing.T) {
	backend := testproc.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() {
		run(ctx, []string{"testserver", "--listen", backend, "--name", "a"}, &lockedBuffer{}, &lockedBuffer{})
	})
	addr, admin := testproc.FreeAddr(t), testproc.FreeAddr(t)
	sctx, stop := context.WithCancel(context.Background())
	var code int
	var errb lockedBuffer
	served := make(chan struct{})
	go func() {
		defer close(served)
		code = run(sctx, []string{"serve", "--listen", addr, "--admin", admin, "--upstream", "http://" + backend + "/mcp"}, &lockedBuffer{}, &errb)
	}()
	testproc.WaitReady(t, "http://"+addr+"/readyz")
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	var m bytes.Buffer
	m.ReadFrom(resp.Body)
	resp.Body.Close()
	if !strings.Contains(m.String(), "mcpfleet_replica_in_flight") || !strings.Contains(m.String(), "go_goroutines") {
		t.Errorf("admin /metrics lacks gateway or runtime metrics")
	}
	// Profiles are on neither listener unless admin_pprof asks for them.
	for base, want := range map[string]int{admin: http.StatusNotFound, addr: http.StatusNotFound} {
		resp, err := http.Get("http://" + base + "/debug/pprof/goroutine?debug=1")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s/debug/pprof/goroutine: %d, want %d", base, resp.StatusCode, want)
		}
	}
	stop()
	<-served
	if code != 0 {
		t.Errorf("serve exit %d: %s", code, errb.String())
	}
	cancel()
	wg.Wait()
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

package gateway

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testproc"
	"github.com/mcpfleet/mcpfleet/internal/testserver"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// readyz answers a GET of /readyz at base: its status and body.
func readyz(t *testing.T, base string) (int, string) {
	t.Helper()
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// runChecker runs a checker of gw's fleet with gw's check options until the
// test ends.
func runChecker(t *testing.T, gw *Gateway) {
	t.Helper()
	c, err := upstream.NewChecker(gw.fleet, &upstream.CheckOptions{Interval: gw.opts.HealthCheckInterval, Timeout: gw.opts.HealthCheckTimeout})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// TestReadyzWaitsForTheFirstChecks: /readyz is 503 {"status":"starting"}
// from the first instant while a replica's first check is out (its health
// endpoint is slow), then 200 once every replica has been checked.
func TestReadyzWaitsForTheFirstChecks(t *testing.T) {
	release := make(chan struct{})
	var specs []upstream.Spec
	for i, name := range []string{"replica-a", "replica-b"} {
		s, _ := testserver.New(name, nil)
		h := s.Handler()
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if i == 1 && r.URL.Path == "/health" {
				select {
				case <-release:
				case <-r.Context().Done():
				}
			}
			h.ServeHTTP(w, r)
		}))
		t.Cleanup(hs.Close)
		specs = append(specs, upstream.Spec{Name: name, URL: hs.URL + "/mcp"})
	}
	gw := startGatewayOn(t, specs, &Options{HealthCheckInterval: 20 * time.Second, HealthCheckTimeout: 10 * time.Second}, io.Discard)
	front := newFront(gw)
	t.Cleanup(front.Close)
	if code, body := readyz(t, front.URL); code != 503 || body != `{"status":"starting"}` {
		t.Fatalf("/readyz before any check = %d %s, want 503 starting", code, body)
	}
	runChecker(t, gw)
	deadline := time.Now().Add(5 * time.Second)
	for gw.fleet.Snapshot().At(0).LastCheck() == nil {
		if time.Now().After(deadline) {
			t.Fatal("the fast replica was never checked")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if code, body := readyz(t, front.URL); code != 503 || body != `{"status":"starting"}` {
		t.Fatalf("/readyz with one replica's first check out = %d %s, want 503 starting", code, body)
	}
	close(release)
	for {
		code, body := readyz(t, front.URL)
		if code == 200 && body == `{"status":"ready"}` {
			break
		}
		if code != 503 || body != `{"status":"starting"}` || time.Now().After(deadline) {
			t.Fatalf("/readyz after the checks = %d %s, want 200 ready", code, body)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestReadyzStaysUnreadyWithEveryReplicaDead: with every replica dead,
// /readyz never says ready: starting while the first checks are out, then
// not ready, as one failed first check takes a replica down.
func TestReadyzStaysUnreadyWithEveryReplicaDead(t *testing.T) {
	specs := []upstream.Spec{
		{Name: "refused", URL: "http://" + testproc.RefusedAddr(t) + "/mcp"},
		{Name: "silent", URL: silentURL(t)},
	}
	gw := startGatewayOn(t, specs, &Options{HealthCheckInterval: 400 * time.Millisecond, HealthCheckTimeout: 200 * time.Millisecond}, io.Discard)
	front := newFront(gw)
	t.Cleanup(front.Close)
	runChecker(t, gw)
	seen := map[string]bool{}
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		code, body := readyz(t, front.URL)
		if code != 503 {
			t.Fatalf("/readyz = %d %s with every replica dead", code, body)
		}
		seen[body] = true
	}
	for _, want := range []string{`{"status":"starting"}`, `{"status":"not ready","reason":"no replica can take new work"}`} {
		if !seen[want] {
			t.Errorf("/readyz never answered %s; answers: %v", want, seen)
		}
	}
}

// silentURL is the MCP URL of a server that accepts connections and never
// answers.
func silentURL(t *testing.T) string {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })
	return hs.URL + "/mcp"
}

// TestReadyzWaitIsBounded: past the check interval plus its timeout,
// /readyz answers as it would without the wait, though no check ever came;
// once over, the wait never begins again. Without checks there is none.
func TestReadyzWaitIsBounded(t *testing.T) {
	f := startFleet(t, 1, &Options{HealthCheckInterval: time.Second, HealthCheckTimeout: 500 * time.Millisecond})
	snap := f.gw.fleet.Snapshot()
	start := f.gw.started
	for _, tt := range []struct {
		at   time.Duration
		want bool
	}{
		{0, true},
		{1499 * time.Millisecond, true},
		{1500 * time.Millisecond, false},
		{0, false}, // over: never again
	} {
		if got := f.gw.warm.waiting(snap, start.Add(tt.at)); got != tt.want {
			t.Errorf("waiting at %v = %v, want %v", tt.at, got, tt.want)
		}
	}
	if code, body := readyz(t, f.front.URL); code != 200 {
		t.Errorf("/readyz past the bound = %d %s, want 200", code, body)
	}
	off := startFleet(t, 1, nil)
	if code, body := readyz(t, off.front.URL); code != 200 {
		t.Errorf("/readyz without checks = %d %s, want 200 at once", code, body)
	}
}

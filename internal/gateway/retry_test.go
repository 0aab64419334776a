package gateway

import (
	"context"
	"github.com/mcpfleet/mcpfleet/internal/testproc"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/balance"
	"github.com/mcpfleet/mcpfleet/internal/testserver"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// refusedURL returns a loopback URL on which nothing listens.
func refusedURL(t *testing.T) string {
	t.Helper()
	return "http://" + testproc.RefusedAddr(t) + "/mcp" // held, never listening: refused for the whole test
}

func liveReplica(t *testing.T, name string) (*testserver.Server, string) {
	t.Helper()
	s, err := testserver.New(name, nil)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return s, hs.URL + "/mcp"
}

// TestRetryMovesUndeliveredRequest: a replica that refuses connections never
// saw the request, so the gateway moves it to another one.
func TestRetryMovesUndeliveredRequest(t *testing.T) {
	_, live := liveReplica(t, "live")
	gw := startGatewayOn(t, []upstream.Spec{{Name: "dead", URL: refusedURL(t)}, {Name: "live", URL: live}},
		&Options{Balance: balance.RoundRobin}, io.Discard)
	front := newFront(gw)
	defer front.Close()
	r := newRaw(t, front.URL+"/mcp", "2026-07-28")
	for i := range 6 {
		resp := r.post(context.Background(), i+1, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}}, nil)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"text":"live"`) {
			t.Fatalf("call %d: %d %q", i, resp.StatusCode, b)
		}
	}
	// Round-robin starts every other request at the dead replica, which
	// then moves once.
	if n := testutil.ToFloat64(gw.metrics.retries.WithLabelValues("not_delivered")); n != 3 {
		t.Errorf("retries = %v, want 3", n)
	}
}

// TestNeverResendsDeliveredRequest: a replica that takes the request and
// then drops the connection may have run it; the gateway answers 502 and
// does not send it anywhere else.
func TestNeverResendsDeliveredRequest(t *testing.T) {
	var hits atomic.Int32
	dropper := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.ReadAll(r.Body)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer dropper.Close()
	srv, live := liveReplica(t, "live")
	gw := startGatewayOn(t, []upstream.Spec{{Name: "dropper", URL: dropper.URL + "/mcp"}, {Name: "live", URL: live}},
		&Options{Balance: balance.RoundRobin, Retries: 3}, io.Discard)
	front := newFront(gw)
	defer front.Close()
	r := newRaw(t, front.URL+"/mcp", "2026-07-28")
	resp := r.post(context.Background(), 1, "tools/call", map[string]any{"name": "mutate", "arguments": map[string]any{"key": "k", "seconds": 0, "at": 0}}, nil)
	code, _ := rpcError(t, resp)
	if resp.StatusCode != http.StatusBadGateway || code != -32603 {
		t.Errorf("got %d %d, want 502 -32603", resp.StatusCode, code)
	}
	if hits.Load() != 1 || srv.Count("k") != 0 {
		t.Errorf("dropper saw %d requests and live mutated %d times; want 1 and 0", hits.Load(), srv.Count("k"))
	}
}

// TestSessionOfUnreachableReplicaIs404: when a session's replica cannot be
// reached its sessions are gone; 404 -32001 makes the client start over.
func TestSessionOfUnreachableReplicaIs404(t *testing.T) {
	s, err := testserver.New("only", nil)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	gw := startGatewayOn(t, []upstream.Spec{{Name: "only", URL: hs.URL + "/mcp"}}, nil, io.Discard)
	front := newFront(gw)
	defer front.Close()
	r := newRaw(t, front.URL+"/mcp", "2025-11-25")
	r.initialize()
	hs.CloseClientConnections()
	hs.Close()
	resp := r.post(context.Background(), 2, "tools/list", nil, nil)
	if code, _ := rpcError(t, resp); resp.StatusCode != 404 || code != -32001 {
		t.Errorf("got %d %d, want 404 -32001", resp.StatusCode, code)
	}
}

// TestRetryRulesThroughGateway: a delivered request moves on only when the
// replicas' own tools/list declares the tool read-only or idempotent, and a
// replica that refuses with 503 draining ran nothing, so even a mutating
// call moves on.
func TestRetryRulesThroughGateway(t *testing.T) {
	dropper := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
	}))
	defer dropper.Close()
	draining := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"status":"draining"}`)
	}))
	defer draining.Close()
	srv, live := liveReplica(t, "live")

	t.Run("delivered read-only call moves on", func(t *testing.T) {
		gw := startGatewayOn(t, []upstream.Spec{{Name: "dropper", URL: dropper.URL + "/mcp"}, {Name: "live", URL: live}},
			&Options{Balance: balance.RoundRobin}, io.Discard)
		front := newFront(gw)
		defer front.Close()
		r := newRaw(t, front.URL+"/mcp", "2026-07-28")
		// tools/list only reads, so it may move on; its answer teaches the
		// gateway that whoami is read-only.
		for i := range 2 {
			resp := r.post(context.Background(), i+1, "tools/list", nil, nil)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("tools/list %d: %d", i, resp.StatusCode)
			}
		}
		for i := range 4 {
			resp := r.post(context.Background(), i+10, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}}, nil)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(string(b), "live") {
				t.Fatalf("whoami %d: %d %s", i, resp.StatusCode, b)
			}
		}
		if n := testutil.ToFloat64(gw.metrics.retries.WithLabelValues("delivered_safe")); n < 2 {
			t.Errorf("delivered_safe retries = %v, want at least 2", n)
		}
	})
	t.Run("draining refusal moves even a mutation", func(t *testing.T) {
		gw := startGatewayOn(t, []upstream.Spec{{Name: "draining", URL: draining.URL + "/mcp"}, {Name: "live", URL: live}},
			&Options{Balance: balance.RoundRobin}, io.Discard)
		front := newFront(gw)
		defer front.Close()
		r := newRaw(t, front.URL+"/mcp", "2026-07-28")
		for i := range 4 {
			resp := r.post(context.Background(), i+1, "tools/call", map[string]any{"name": "mutate", "arguments": map[string]any{"key": "d", "seconds": 0, "at": 0}}, nil)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("mutate %d: %d", i, resp.StatusCode)
			}
		}
		if srv.Count("d") != 4 {
			t.Errorf("4 calls mutated %d times on live", srv.Count("d"))
		}
		if n := testutil.ToFloat64(gw.metrics.retries.WithLabelValues("draining")); n != 2 {
			t.Errorf("draining retries = %v, want 2", n)
		}
	})
}

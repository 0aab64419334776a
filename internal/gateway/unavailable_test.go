package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// checkOnce runs one round of health checks of gw's fleet.
func checkOnce(t *testing.T, gw *Gateway) {
	t.Helper()
	c, err := upstream.NewChecker(gw.fleet, &upstream.CheckOptions{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c.Check(t.Context())
}

// noReplicaAnswer reads a 503 "no replica" answer: its Retry-After, and the
// JSON-RPC error's code, id and data.
type noReplicaAnswer struct {
	status     int
	retryAfter string
	code       int
	id         string
	retryMs    int
}

func readNoReplica(t *testing.T, resp *http.Response) noReplicaAnswer {
	t.Helper()
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var v struct {
		ID    json.RawMessage `json:"id"`
		Error struct {
			Code int `json:"code"`
			Data struct {
				RetryAfterMs int `json:"retryAfterMs"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%d answer is not a JSON-RPC error: %q", resp.StatusCode, b)
	}
	return noReplicaAnswer{resp.StatusCode, resp.Header.Get("Retry-After"), v.Error.Code, string(v.ID), v.Error.Data.RetryAfterMs}
}

// TestAllReplicasOut: with every replica down, new work of every kind (a
// 2026-07-28 call, a new 2025-11-25 session, a listen fanned out to every
// replica, a 2024-11-05 stream, a passthrough path) is answered 503 with Retry-After (the check interval,
// in whole seconds rounded up) and a JSON-RPC error, not 502.
func TestAllReplicasOut(t *testing.T) {
	specs := []upstream.Spec{{Name: "a", URL: refusedURL(t)}, {Name: "b", URL: refusedURL(t)}}
	gw := startGatewayOn(t, specs, &Options{HealthCheckInterval: 2500 * time.Millisecond, PassthroughPaths: []string{"/files/"}}, io.Discard)
	front := newFront(gw)
	t.Cleanup(front.Close)
	checkOnce(t, gw)
	if anyEligible(gw.fleet.Snapshot()) {
		t.Fatal("a dead replica is still eligible after its first check")
	}
	call := func() *http.Response {
		return newRaw(t, front.URL+"/mcp", "2026-07-28").post(context.Background(), 7, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}}, nil)
	}
	initialize := func() *http.Response {
		return newRaw(t, front.URL+"/mcp", "2025-11-25").post(context.Background(), 7, "initialize", map[string]any{
			"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}}, nil)
	}
	listen := func() *http.Response {
		return newRaw(t, front.URL+"/mcp", "2026-07-28").post(context.Background(), 7, "subscriptions/listen", map[string]any{}, nil)
	}
	get := func(path string) func() *http.Response {
		return func() *http.Response {
			req, _ := http.NewRequest(http.MethodGet, front.URL+path, nil)
			req.Header.Set("Accept", "text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			return resp
		}
	}
	for _, tt := range []struct {
		name string
		send func() *http.Response
		id   string
	}{
		{"2026-07-28 call", call, "7"},
		{"2025-11-25 initialize", initialize, "7"},
		{"2026-07-28 subscriptions/listen (every replica)", listen, "7"},
		{"2024-11-05 stream", get("/sse"), "null"},
		{"passthrough", get("/files/x"), "null"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := readNoReplica(t, tt.send())
			want := noReplicaAnswer{503, "3", -32603, tt.id, 3000}
			if got != want {
				t.Errorf("answer %+v, want %+v", got, want)
			}
		})
	}
}

// TestAllOutButOneAnswers: with every replica out by its checks, a request
// still goes to one (as nginx does); one that takes it serves it, and one
// that takes it and fails mid-call is 502 after delivery, not "no
// replica": only a request no replica took is 503.
func TestAllOutButOneAnswers(t *testing.T) {
	dropper := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			http.Error(w, "broken", http.StatusInternalServerError)
			return
		}
		io.ReadAll(r.Body)
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
	}))
	t.Cleanup(dropper.Close)
	gw := startGatewayOn(t, []upstream.Spec{{Name: "dropper", URL: dropper.URL + "/mcp"}}, &Options{HealthCheckInterval: time.Second}, io.Discard)
	front := newFront(gw)
	t.Cleanup(front.Close)
	checkOnce(t, gw)
	if anyEligible(gw.fleet.Snapshot()) {
		t.Fatal("the replica whose health fails is still eligible")
	}
	resp := newRaw(t, front.URL+"/mcp", "2026-07-28").post(context.Background(), 1, "tools/call", map[string]any{"name": "mutate", "arguments": map[string]any{"key": "k"}}, nil)
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		t.Errorf("Retry-After %q on a call that failed after delivery", ra)
	}
	if code, _ := rpcError(t, resp); resp.StatusCode != http.StatusBadGateway || code != -32603 {
		t.Errorf("got %d %d, want 502 -32603", resp.StatusCode, code)
	}
}

func TestNoReplicaRetryAfter(t *testing.T) {
	for in, want := range map[time.Duration]time.Duration{
		0:                       time.Second,
		200 * time.Millisecond:  time.Second,
		time.Second:             time.Second,
		1001 * time.Millisecond: 2 * time.Second,
		2 * time.Second:         2 * time.Second,
		2500 * time.Millisecond: 3 * time.Second,
	} {
		if got := noReplicaError(in).RetryAfter; got != want {
			t.Errorf("interval %v: Retry-After %v, want %v", in, got, want)
		}
	}
}

package gateway

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestEarlyStreamLeavesNoDeadline: the writes of an early stream (the
// gateway's own SSE stream for a silent call) set write deadlines on the
// client's connection; the connection outlives the request, so the next
// request on it, answered after those deadlines have passed, must still get
// its answer.
func TestEarlyStreamLeavesNoDeadline(t *testing.T) {
	f := startFleet(t, 1, &Options{KeepAlive: 100 * time.Millisecond, WriteTimeout: 300 * time.Millisecond})
	r := newRaw(t, f.url(), "2026-07-28")
	r.client = &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	read := func(what string, resp *http.Response) string {
		t.Helper()
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %q %v", what, resp.StatusCode, b, err)
		}
		return string(b)
	}
	// Silent for 0.4 s: the gateway opens the stream at 0.1 s.
	first := read("the silent call", r.post(ctx, 1, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"seconds": 0.4}}, nil))
	if !strings.Contains(first, ": keepalive") && !strings.Contains(first, "event:") {
		t.Fatalf("the silent call got no early stream: %q", first)
	}
	time.Sleep(500 * time.Millisecond) // past the last write's deadline
	if got := read("the next call on the connection", r.post(ctx, 2, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}}, nil)); !strings.Contains(got, "replica-a") {
		t.Fatalf("the next call: %q", got)
	}
}

package gateway

import (
	"context"
	"testing"
	"time"
)

// TestKeepAliveOnSilentStream: a 4 s sleep says nothing; with a 1 s interval
// the gateway fills the silence with comments, and the stream opens at once.
func TestKeepAliveOnSilentStream(t *testing.T) {
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			f := startFleet(t, 3, &Options{KeepAlive: time.Second})
			r := newRaw(t, f.url(), version)
			if version == "2025-11-25" {
				r.initialize()
			}
			start := time.Now()
			resp := r.post(context.Background(), 2, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"seconds": 4}}, nil)
			defer resp.Body.Close()
			// The replica holds its headers back for 4 s; the gateway opens
			// the stream itself after one keep-alive interval (two spare
			// for a loaded machine).
			if waited := time.Since(start); waited > 3*time.Second {
				t.Errorf("response headers took %v: the stream stayed silent", waited)
			}
			if resp.Header.Get("X-Accel-Buffering") != "no" || resp.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("headers %v", resp.Header)
			}
			var all []string
			for l := range lines(resp.Body) {
				all = append(all, l)
			}
			// Due at 1, 2 and 3 s; one may come late.
			if n := hasPrefixLine(all, ": keep-alive"); n < 2 {
				t.Errorf("%d keep-alive comments in a 4 s silence at 1 s, want at least 2; stream %q", n, all)
			}
			if hasPrefixLine(all, "data: ") == 0 {
				t.Errorf("no result in the stream %q", all)
			}
		})
	}
}

// TestKeepAliveOff: with keep-alives off nothing but the replica's own
// events reaches the client.
func TestKeepAliveOff(t *testing.T) {
	f := startFleet(t, 1, &Options{KeepAlive: -1})
	r := newRaw(t, f.url(), "2026-07-28")
	resp := r.post(context.Background(), 2, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"seconds": 1.5}}, nil)
	defer resp.Body.Close()
	var all []string
	for l := range lines(resp.Body) {
		all = append(all, l)
	}
	if n := hasPrefixLine(all, ": keep-alive"); n != 0 {
		t.Errorf("%d keep-alives with keep-alive off", n)
	}
}

// TestDroppedStreamSemantics shows the two eras' rules with mutate/count: a
// client that drops a 2026-07-28 stream cancels the call before it mutates;
// one that drops a legacy stream does not, so the mutation happens.
func TestDroppedStreamSemantics(t *testing.T) {
	tests := []struct {
		version string
		want    int
	}{
		{"2026-07-28", 0},
		{"2025-11-25", 1},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			// The replica holds back its headers until the result; a short
			// keep-alive makes the gateway open the stream at 200 ms.
			f := startFleet(t, 3, &Options{KeepAlive: 200 * time.Millisecond})
			r := newRaw(t, f.url(), tt.version)
			if tt.version == "2025-11-25" {
				r.initialize()
			}
			key := "k-" + tt.version
			ctx, drop := context.WithCancel(context.Background())
			resp := r.post(ctx, 3, "tools/call", map[string]any{
				"name": "mutate", "arguments": map[string]any{"key": key, "seconds": 3, "at": 0.5},
			}, nil)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			// The call runs; its mutation is due at 1.5 s, which leaves the
			// cancel more than a second to reach the replica on a loaded
			// machine under the race detector.
			time.Sleep(300 * time.Millisecond)
			drop()
			resp.Body.Close()
			time.Sleep(3 * time.Second) // past the call's end
			if got := f.count(key); got != tt.want {
				t.Errorf("after the client dropped the stream, %s mutated %d times, want %d", key, got, tt.want)
			}
		})
	}
}

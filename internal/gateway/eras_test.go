package gateway

import (
	"context"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/balance"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestLegacySessionStaysOnItsReplica drives a 2025-11-25 client: every call
// of its session lands on the replica that minted it.
func TestLegacySessionStaysOnItsReplica(t *testing.T) {
	f := startFleet(t, 3, &Options{Balance: balance.RoundRobin})
	cs := connect(t, f.url(), "2025-11-25", nil)
	if cs.ID() == "" {
		t.Fatal("legacy session has no Mcp-Session-Id")
	}
	if got := cs.InitializeResult().ProtocolVersion; got != "2025-11-25" {
		t.Fatalf("negotiated %s, want 2025-11-25", got)
	}
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(tools.Tools) < 5 {
		t.Fatalf("tools/list = %v, %v", tools, err)
	}
	first := callText(t, cs, "whoami", nil)
	for i := range 19 {
		if got := callText(t, cs, "whoami", nil); got != first {
			t.Fatalf("call %d landed on %s, the session lives on %s", i+2, got, first)
		}
	}
	// A second session may start elsewhere (round-robin), and keeps to its own.
	other := connect(t, f.url(), "2025-11-25", nil)
	o := callText(t, other, "whoami", nil)
	if callText(t, other, "whoami", nil) != o {
		t.Fatal("second session moved between replicas")
	}
}

// TestStatelessSpreadsOverReplicas drives a 2026-07-28 client: its requests
// spread over all three replicas.
func TestStatelessSpreadsOverReplicas(t *testing.T) {
	for _, p := range []balance.Policy{balance.RoundRobin, balance.LeastInFlight} {
		t.Run(p.String(), func(t *testing.T) {
			f := startFleet(t, 3, &Options{Balance: p})
			cs := connect(t, f.url(), "", nil)
			if got := cs.InitializeResult().ProtocolVersion; got != "2026-07-28" {
				t.Fatalf("negotiated %s, want 2026-07-28", got)
			}
			if cs.ID() != "" {
				t.Errorf("stateless era got a session ID")
			}
			if _, err := cs.ListTools(context.Background(), nil); err != nil {
				t.Fatalf("tools/list: %v", err)
			}
			seen := map[string]int{}
			for range 20 {
				seen[callText(t, cs, "whoami", nil)]++
			}
			if len(seen) != 3 {
				t.Errorf("20 calls reached %v, want all three replicas", seen)
			}
			if p == balance.RoundRobin {
				for name, n := range seen {
					if n < 6 {
						t.Errorf("round-robin gave %s only %d of 20", name, n)
					}
				}
			}
		})
	}
}

// TestLegacyGetAndDeleteFollowTheSession checks the standalone GET stream and
// DELETE reach the session's replica, and that an ended session is forgotten.
func TestLegacyGetAndDeleteFollowTheSession(t *testing.T) {
	f := startFleet(t, 3, &Options{Balance: balance.RoundRobin})
	r := newRaw(t, f.url(), "2025-11-25")
	r.initialize()
	ctx, cancel := context.WithCancel(context.Background())
	get, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.url(), nil)
	get.Header.Set("Accept", "text/event-stream")
	get.Header.Set("Mcp-Session-Id", r.session)
	get.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := r.client.Do(get)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	cancel()
	resp.Body.Close()

	del, _ := http.NewRequest(http.MethodDelete, f.url(), nil)
	del.Header.Set("Mcp-Session-Id", r.session)
	del.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err = r.client.Do(del)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %d, want 204 from the session's replica", resp.StatusCode)
	}
	resp = r.post(context.Background(), 5, "tools/list", nil, nil)
	if code, _ := rpcError(t, resp); resp.StatusCode != 404 || code != -32001 {
		t.Errorf("request on a deleted session: %d %d, want 404 -32001", resp.StatusCode, code)
	}
}

// TestProgressArrivesThroughGateway checks notifications/progress relayed
// event by event, in both eras.
func TestProgressArrivesThroughGateway(t *testing.T) {
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			f := startFleet(t, 3, nil)
			var mu sync.Mutex
			var times []time.Time
			cs := connect(t, f.url(), version, &mcp.ClientOptions{
				ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
					mu.Lock()
					defer mu.Unlock()
					times = append(times, time.Now())
				},
			})
			// Eleven ticks or so: a loaded machine's ticker drops some.
			params := &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"seconds": 1.2, "progress_every": 0.1}}
			params.SetProgressToken("p1")
			start := time.Now()
			if _, err := cs.CallTool(context.Background(), params); err != nil {
				t.Fatal(err)
			}
			end := time.Now()
			// The client handles notifications asynchronously.
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				mu.Lock()
				n := len(times)
				mu.Unlock()
				if n >= 3 {
					break
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(times) < 3 {
				t.Fatalf("%d progress notifications arrived, want at least 3", len(times))
			}
			// Relayed as they happen, not buffered to the end.
			if first := times[0]; first.Sub(start) > end.Sub(start)-300*time.Millisecond {
				t.Errorf("first progress arrived %v into a %v call: buffered", first.Sub(start), end.Sub(start))
			}
		})
	}
}

// TestEndStandaloneStreams: on shutdown the gateway closes legacy GET
// streams at once instead of letting them hold the grace period.
func TestEndStandaloneStreams(t *testing.T) {
	f := startFleet(t, 1, nil)
	r := newRaw(t, f.url(), "2025-11-25")
	r.initialize()
	get, _ := http.NewRequest(http.MethodGet, f.url(), nil)
	get.Header.Set("Accept", "text/event-stream")
	get.Header.Set("Mcp-Session-Id", r.session)
	get.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := r.client.Do(get)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	ended := make(chan struct{})
	go func() { io.Copy(io.Discard, resp.Body); close(ended) }()
	select {
	case <-ended:
		t.Fatal("the GET stream ended by itself")
	case <-time.After(200 * time.Millisecond):
	}
	f.gw.EndStandaloneStreams()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the GET stream stayed open after EndStandaloneStreams")
	}
}

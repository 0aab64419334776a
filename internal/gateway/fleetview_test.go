package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/admin"
	"github.com/mcpfleet/mcpfleet/internal/balance"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// view is the gateway's fleet view, held to its schema.
func view(t *testing.T, g *Gateway) admin.Fleet {
	t.Helper()
	f := g.Fleet(time.Now())
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.ValidateFleetJSON(b); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	return f
}

func replicaOf(t *testing.T, f admin.Fleet, name string) admin.Replica {
	t.Helper()
	for _, r := range f.Replicas {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no replica %s in the view", name)
	return admin.Replica{}
}

// TestFleetViewCountsWhatReachesEachReplica: requests, a session, a call in
// flight and its stream, and the latency show on the replica they reached,
// and nowhere else.
func TestFleetViewCountsWhatReachesEachReplica(t *testing.T) {
	f := startFleet(t, 3, &Options{Balance: balance.RoundRobin})
	v := view(t, f.gw)
	if len(v.Replicas) != 3 {
		t.Fatalf("%d replicas in the view, want 3", len(v.Replicas))
	}
	for _, r := range v.Replicas {
		if r.State != admin.StateUp || r.Requests != 0 || r.LastCheck != nil {
			t.Fatalf("a fresh replica: %+v", r)
		}
	}
	legacy := connect(t, f.url(), "2025-11-25", nil)
	home := callText(t, legacy, "whoami", nil)
	for range 3 {
		callText(t, legacy, "whoami", nil)
	}
	v = view(t, f.gw)
	if r := replicaOf(t, v, home); r.Sessions != 1 || r.Requests < 5 || r.LatencyP50 <= 0 || r.LatencyP99 < r.LatencyP50 {
		t.Fatalf("the session's replica: %+v, want 1 session, its 5 or more requests and their latency", r)
	}
	for _, r := range v.Replicas {
		if r.Name != home && r.Sessions != 0 {
			t.Fatalf("%s counts a session it never had: %+v", r.Name, r)
		}
	}
	// A slow call in flight with its stream, while it runs, then gone. On
	// a fleet of its own, in the 2026-07-28 era: a legacy session's
	// standalone GET stream, which the client opens when it likes, would
	// count too.
	g := startFleet(t, 1, nil)
	stateless := connect(t, g.url(), "", nil)
	done := make(chan error, 1)
	go func() {
		// With a progress token the replica streams its progress at
		// once (a silent call would sit in an early stream of the
		// gateway's own until the replica answers).
		p := &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"seconds": 2, "progress_every": 0.2}}
		p.SetProgressToken("slow")
		_, err := stateless.CallTool(context.Background(), p)
		done <- err
	}()
	waitReplica(t, g.gw, "replica-a", "the slow call in flight with its stream", func(r admin.Replica) bool {
		return r.InFlight == 1 && r.Streams == 1
	})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	waitReplica(t, g.gw, "replica-a", "the call ended", func(r admin.Replica) bool {
		return r.InFlight == 0 && r.Streams == 0 && r.Requests >= 1 && r.Errors == 0 && r.LatencyP99 >= 1500
	})
}

// waitReplica waits up to 5 s for the view of replica name to satisfy ok.
func waitReplica(t *testing.T, g *Gateway, name, what string, ok func(admin.Replica) bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		r := replicaOf(t, view(t, g), name)
		if ok(r) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: never seen on %s: %+v", what, name, r)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDrainByHand: a replica drained by hand takes no new 2026-07-28 call
// and no new session, while a session already there keeps working; resumed,
// it takes new work again.
func TestDrainByHand(t *testing.T) {
	f := startFleet(t, 3, &Options{Balance: balance.RoundRobin})
	legacy := connect(t, f.url(), "2025-11-25", nil)
	home := callText(t, legacy, "whoami", nil)
	if changed, err := f.gw.SetHeld(home, true); err != nil || !changed {
		t.Fatalf("SetHeld: %v %v", changed, err)
	}
	if _, err := f.gw.SetHeld("nope", true); err != admin.ErrUnknownReplica {
		t.Fatalf("an unknown replica: %v", err)
	}
	r := replicaOf(t, view(t, f.gw), home)
	if r.State != admin.StateDraining || !r.Held || r.Health != admin.StateUp {
		t.Fatalf("the held replica: %+v, want draining, held, healthy", r)
	}
	before := r.Requests
	stateless := connect(t, f.url(), "", nil)
	for range 12 {
		if got := callText(t, stateless, "whoami", nil); got == home {
			t.Fatalf("a new 2026-07-28 call reached %s, drained by hand", home)
		}
	}
	for range 3 {
		if s := connect(t, f.url(), "2025-11-25", nil); callText(t, s, "whoami", nil) == home {
			t.Fatalf("a new session opened on %s, drained by hand", home)
		}
	}
	for range 3 {
		if got := callText(t, legacy, "whoami", nil); got != home {
			t.Fatalf("the session moved to %s", got)
		}
	}
	// The session's three calls went there (its standalone GET stream, if
	// the client had one open, may have ended meanwhile and count too);
	// the answers above show no new work did.
	// A request is counted once its handler returns, which may be a moment
	// after its client has the answer.
	waitReplica(t, f.gw, home, "the session's 3 requests counted", func(r admin.Replica) bool { return r.Requests >= before+3 })
	f.gw.SetHeld(home, false)
	seen := map[string]bool{}
	for range 6 {
		seen[callText(t, stateless, "whoami", nil)] = true
	}
	if !seen[home] {
		t.Fatalf("resumed, %s took none of 6 round-robin calls (%v)", home, seen)
	}
}

// TestFleetViewKeepsRecentErrors: a replica's 5xx answers and the requests
// that never reached a replica show in the view's recent_errors of that
// replica, newest first, with the method and the replica's status, and
// nothing on the other.
func TestFleetViewKeepsRecentErrors(t *testing.T) {
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "out of order", http.StatusBadGateway)
	}))
	t.Cleanup(broken.Close)
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close() // connections to it are refused
	gw := startGatewayOn(t, []upstream.Spec{{Name: "broken", URL: broken.URL + "/mcp"}, {Name: "gone", URL: gone.URL + "/mcp"}},
		&Options{Balance: balance.RoundRobin}, io.Discard)
	front := newFront(gw)
	t.Cleanup(front.Close)
	r := newRaw(t, front.URL+"/mcp", "2026-07-28")
	for i := range 4 {
		resp := r.post(context.Background(), i+1, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}}, nil)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	v := view(t, gw)
	b := replicaOf(t, v, "broken")
	if len(b.RecentErrors) != 4 {
		t.Fatalf("broken: %d recent errors, want the 4 calls it answered 502: %+v", len(b.RecentErrors), b.RecentErrors)
	}
	for i, e := range b.RecentErrors {
		if e.Outcome != upstream.OutcomeError || e.Method != "tools/call" || e.Status != http.StatusBadGateway {
			t.Errorf("broken's error %d: %+v, want upstream_error tools/call 502", i, e)
		}
		if i > 0 && e.At.After(b.RecentErrors[i-1].At) {
			t.Errorf("broken's errors are not newest first: %+v", b.RecentErrors)
		}
	}
	g := replicaOf(t, v, "gone")
	if len(g.RecentErrors) == 0 || g.RecentErrors[0].Outcome != upstream.OutcomeConnect || g.Requests != 0 {
		t.Fatalf("gone: %+v, want its connect failures and no request", g)
	}
}

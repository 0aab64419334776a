package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/balance"
	"github.com/mcpfleet/mcpfleet/internal/tools"
	"github.com/mcpfleet/mcpfleet/internal/tools/listing"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// listTools is the watcher's listing, on the real lister.
func listTools(ctx context.Context, url string) ([]tools.Definition, string, error) {
	return listing.List(ctx, url, listing.ListOptions{})
}

// waitFor polls cond every 20 ms for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: still not so after 10 s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// calledText posts a 2026-07-28 tools/call and returns its first text, or
// the body when the call failed.
func calledText(t *testing.T, url, tool string) (string, bool) {
	t.Helper()
	r := newRaw(t, url, "2026-07-28")
	resp := r.post(context.Background(), 1, "tools/call", map[string]any{"name": tool, "arguments": map[string]any{}}, nil)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var v struct {
		Result *struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	body := string(b)
	if i := strings.Index(body, "{"); i >= 0 && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		body = body[i : strings.LastIndex(body, "}")+1]
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &v) != nil || v.Result == nil || v.Result.IsError || len(v.Result.Content) == 0 {
		return string(b), false
	}
	return v.Result.Content[0].Text, true
}

// A tool that one replica of three serves (the first upgraded by a rolling
// deploy) is called only there once the watcher has listed it, whatever
// the policy would have chosen; without the watcher, round-robin sends
// two calls in three to replicas that answer "unknown tool". A replica
// that gains the tool is listed within a refresh.
func TestToolAwareRouting(t *testing.T) {
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprintf("watch=%v", on), func(t *testing.T) {
			opts := &Options{Balance: balance.RoundRobin}
			if on {
				opts.Tools = &ToolOptions{List: listTools, Refresh: time.Second}
			}
			f := startFleet(t, 3, opts)
			f.servers[1].AddTool("fresh")
			if on {
				waitFor(t, "the watcher to list replica-b's new tool", func() bool { return f.gw.tw.declares("replica-b", "fresh") })
			}
			failed := 0
			for range 12 {
				if text, ok := calledText(t, f.url(), "fresh"); !ok || text != "fresh" {
					failed++
				}
			}
			if !on {
				if failed < 6 {
					t.Errorf("without the watcher %d of 12 calls failed; round-robin over one replica of three with the tool should fail about 8", failed)
				}
				return
			}
			if failed != 0 {
				t.Errorf("%d of 12 calls of a tool one replica serves failed through tool-aware routing", failed)
			}
			if n := testutil.ToFloat64(f.gw.metrics.toolReroutes); n < 6 {
				t.Errorf("mcpfleet_tool_reroutes_total = %v, want the calls round-robin would have sent elsewhere (about 8)", n)
			}
			// Tools every replica serves spread as before.
			seen := map[string]bool{}
			for range 6 {
				text, _ := calledText(t, f.url(), "whoami")
				seen[text] = true
			}
			if len(seen) != 3 {
				t.Errorf("whoami reached %v: a tool every replica serves is not restricted", seen)
			}
			// A second replica gains the tool: the watcher lists it within a
			// refresh.
			f.servers[2].AddTool("fresh")
			waitFor(t, "the watcher to list replica-c's new tool", func() bool { return f.gw.tw.declares("replica-c", "fresh") })
		})
	}
}

// startLocked starts three replicas, a lock made from the first, and a
// gateway that quarantines replicas breaking it.
func startLocked(t *testing.T) (*fleet, *tools.Lock) {
	t.Helper()
	f := startFleet(t, 3, &Options{Balance: balance.RoundRobin})
	defs, _, err := listTools(t.Context(), f.replicas[0].URL+"/mcp")
	if err != nil {
		t.Fatal(err)
	}
	set, err := tools.NewSet(defs)
	if err != nil {
		t.Fatal(err)
	}
	lock := tools.LockOf(set)
	var specs []upstream.Spec
	for i, hs := range f.replicas {
		specs = append(specs, upstream.Spec{Name: fmt.Sprintf("replica-%c", 'a'+i), URL: hs.URL + "/mcp"})
	}
	f.gw = startGatewayOn(t, specs, &Options{Balance: balance.RoundRobin,
		Tools: &ToolOptions{List: listTools, Refresh: time.Second, Lock: lock, Quarantine: true}}, f.logs)
	f.front = newFront(f.gw)
	t.Cleanup(f.front.Close)
	return f, lock
}

// A replica whose tools break the lock (a changed description: a rug pull)
// takes no new work from its next listing: new calls and new sessions go
// to the others, its 2025-11-25 sessions are answered 404 -32001, the
// fleet view and /api/tools say so, and once its tools match the lock
// again (here: the changed tool removed, which breaks nothing) it is back.
func TestQuarantineOnAChangedDefinition(t *testing.T) {
	f, _ := startLocked(t)
	waitFor(t, "the first listing", func() bool { return f.gw.tw.declares("replica-c", "echo") })
	// Three legacy sessions, round-robin: one on each replica.
	var onC *raw
	for range 3 {
		r := newRaw(t, f.url(), "2025-11-25")
		r.initialize()
		resp := r.post(context.Background(), 2, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}}, nil)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(b), "replica-c") {
			onC = r
		}
	}
	if onC == nil {
		t.Fatal("no session landed on replica-c")
	}
	// replica-c changes echo's description.
	c := f.servers[2]
	c.RemoveTool("echo")
	c.AddTool("echo") // "Added at run time.": a changed description
	rep := f.gw.fleet.Snapshot().Lookup("replica-c")
	waitFor(t, "replica-c to be quarantined", rep.Quarantined)

	for range 9 {
		if text, ok := calledText(t, f.url(), "whoami"); !ok || text == "replica-c" {
			t.Fatalf("a new call reached %q (ok %v) while replica-c is quarantined", text, ok)
		}
	}
	resp := onC.post(context.Background(), 3, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}}, nil)
	code, _ := rpcError(t, resp)
	if resp.StatusCode != http.StatusNotFound || code != -32001 {
		t.Errorf("the session on the quarantined replica: %d %d, want 404 -32001", resp.StatusCode, code)
	}
	if st := replicaView(rep, time.Now()).State; st != "quarantined" {
		t.Errorf("fleet view state %q, want quarantined", st)
	}
	rec := httptest.NewRecorder()
	f.gw.ToolsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/tools", nil))
	var v toolsView
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatalf("/api/tools: %v: %s", err, rec.Body)
	}
	if len(v.Replicas) != 3 || !v.Replicas[2].Quarantined || len(v.Replicas[2].Changes) != 1 ||
		v.Replicas[2].Changes[0].Tool != "echo" || !strings.HasPrefix(v.Replicas[2].Changes[0].What, "description") || v.Replicas[0].Quarantined || len(v.Replicas[0].Changes) != 0 {
		t.Errorf("/api/tools: %s", rec.Body)
	}
	if n := testutil.ToFloat64(f.gw.metrics.sessionMisses.WithLabelValues("replica_quarantined")); n != 1 {
		t.Errorf("session misses for a quarantined replica: %v, want 1", n)
	}
	if !strings.Contains(f.logs.String(), `"replica":"replica-c","tool":"echo","change":"description`) {
		t.Errorf("no log line names the replica's changed tool:\n%s", f.logs)
	}

	// Fixed: the changed tool gone, nothing breaks the lock.
	c.RemoveTool("echo")
	waitFor(t, "replica-c back", func() bool { return !rep.Quarantined() })
	seen := false
	for range 6 {
		if text, _ := calledText(t, f.url(), "whoami"); text == "replica-c" {
			seen = true
		}
	}
	if !seen {
		t.Errorf("replica-c took no call after its tools matched the lock again")
	}
}

// Without a lock a replica whose tools differ from most replicas' is
// reported, and never quarantined.
func TestDisagreeingReplicaIsReportedNotQuarantined(t *testing.T) {
	f := startFleet(t, 3, &Options{Tools: &ToolOptions{List: listTools, Refresh: time.Second}})
	f.servers[0].AddTool("extra")
	waitFor(t, "the listing of replica-a's extra tool", func() bool { return f.gw.tw.declares("replica-a", "extra") })
	waitFor(t, "the report", func() bool {
		return strings.Contains(f.logs.String(), `"msg":"replica's tools differ from most replicas'","replica":"replica-a","tool":"extra","change":"added"`)
	})
	if f.gw.fleet.Snapshot().Lookup("replica-a").Quarantined() {
		t.Error("quarantined without a lock")
	}
}

package gateway

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/session"
)

// sseEvent is one event of a raw SSE body: its id and retry fields,
// whether it had data, and its data.
type sseEvent struct {
	id, retry string
	data      bool
	text      string
}

// nextEvent reads the next event (not a comment) from ch; ok is false when
// the stream ended first.
func nextEvent(t *testing.T, ch <-chan string) (ev sseEvent, ok bool) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	seen := false
	for {
		select {
		case l, open := <-ch:
			if !open {
				return ev, false
			}
			switch {
			case l == "":
				if seen {
					return ev, true
				}
			case strings.HasPrefix(l, ":"):
			case strings.HasPrefix(l, "id: "):
				ev.id, seen = l[len("id: "):], true
			case strings.HasPrefix(l, "retry: "):
				ev.retry, seen = l[len("retry: "):], true
			case strings.HasPrefix(l, "data:"):
				ev.data = ev.data || strings.TrimSpace(l[len("data:"):]) != ""
				ev.text += l[len("data:"):]
				seen = true
			default:
				seen = true
			}
		case <-timeout:
			t.Fatal("no event in 10s")
		}
	}
}

// openID opens a sealed event ID of the raw client's session.
func openID(t *testing.T, gw *Gateway, r *raw, id string) session.EventID {
	t.Helper()
	e, err := gw.keys.OpenEvent(r.session, id)
	if err != nil {
		t.Fatalf("event id %q does not open: %v", id, err)
	}
	return e
}

// wantEnded reads ch to its end within 10s.
func wantEnded(t *testing.T, ch <-chan string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case l, open := <-ch:
			if !open {
				return
			}
			if !strings.HasPrefix(l, ":") && l != "" {
				t.Fatalf("line %q after the last event", l)
			}
		case <-timeout:
			t.Fatal("the stream did not end")
		}
	}
}

// sleepStream posts a sleep with progress and returns its SSE lines.
func sleepStream(t *testing.T, r *raw, seconds float64) <-chan string {
	t.Helper()
	resp := r.post(context.Background(), 2, "tools/call", map[string]any{
		"name": "sleep", "arguments": map[string]any{"seconds": seconds, "progress_every": 0.1}, "_meta": map[string]any{"progressToken": "p"},
	}, nil)
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 {
		t.Fatalf("tools/call: status %d", resp.StatusCode)
	}
	return lines(resp.Body)
}

// get opens a legacy GET stream of the raw client's session, resuming after
// last unless it is empty, and returns its SSE lines.
func (r *raw) get(t *testing.T, last string) <-chan string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, r.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", r.session)
	req.Header.Set("Mcp-Protocol-Version", r.version)
	if last != "" {
		req.Header.Set(lastEventID, last)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 {
		t.Fatalf("GET: status %d", resp.StatusCode)
	}
	return lines(resp.Body)
}

// TestSEP1699StandaloneEnded: a standalone legacy GET stream the gateway
// ends on shutdown gets a last event with an ID of its stream and a retry
// field (SEP-1699), then ends.
func TestSEP1699StandaloneEnded(t *testing.T) {
	f := startFleet(t, 1, nil)
	r := newRaw(t, f.url(), "2025-11-25")
	r.initialize()
	ch := r.get(t, "")
	time.Sleep(100 * time.Millisecond)
	f.gw.EndStandaloneStreams()
	ev, ok := nextEvent(t, ch)
	if !ok {
		t.Fatal("the stream ended without a last event")
	}
	if ev.retry != "1000" || ev.data {
		t.Fatalf("last event %+v, want a retry of 1000 and no data", ev)
	}
	if e := openID(t, f.gw, r, ev.id); !e.Standalone || e.Replica != "replica-a" {
		t.Fatalf("last event's id opens as %+v", e)
	}
	wantEnded(t, ch)
}

// TestSEP1699PostEndedOnShutdown: a legacy POST stream still relayed when
// the grace is over gets a last event with the ID of the last event
// relayed and a retry; a resume with it through another gateway (shared
// buffer) gets the rest of the events, once and in order, and the result.
func TestSEP1699PostEndedOnShutdown(t *testing.T) {
	p := startSharedPair(t)
	r := newRaw(t, p.url+"/mcp", "2025-11-25")
	r.initialize()
	ch := sleepStream(t, r, 2)
	var last session.EventID
	for range 5 {
		ev, ok := nextEvent(t, ch)
		if !ok || ev.id == "" {
			t.Fatalf("event %+v, ended %v", ev, !ok)
		}
		last = openID(t, p.gw, r, ev.id)
	}
	p.gw.EndStreamsForShutdown()
	var end sseEvent
	for {
		ev, ok := nextEvent(t, ch)
		if !ok {
			t.Fatal("the stream ended without a last event")
		}
		if ev.retry != "" {
			end = ev
			break
		}
		// An event relayed before the shutdown's signal reached the relay.
		last = openID(t, p.gw, r, ev.id)
	}
	if end.retry != "1000" || end.data {
		t.Fatalf("last event %+v, want a retry of 1000 and no data", end)
	}
	at := openID(t, p.gw, r, end.id)
	if at.Pos != last.Pos || at.Stream != last.Stream {
		t.Fatalf("last event at %+v, the last relayed at %+v", at, last)
	}

	replay := r.get(t, end.id)
	pos, result := at.Pos, false
	for {
		ev, ok := nextEvent(t, replay)
		if !ok {
			break
		}
		e := openID(t, p.b, r, ev.id)
		if e.Pos != pos+1 {
			t.Fatalf("replayed event at %d after %d", e.Pos, pos)
		}
		pos = e.Pos
		result = ev.data
	}
	if !result || pos <= at.Pos+1 {
		t.Fatalf("replay ended at %d (from %d), last event with data %v", pos, at.Pos, result)
	}
	p.replayedByB(t)
}

// TestSEP1699Stateless: a 2026-07-28 stream is not touched by the
// shutdown's signal: no ID, no retry, and it runs to its end.
func TestSEP1699Stateless(t *testing.T) {
	f := startFleet(t, 1, nil)
	r := newRaw(t, f.url(), "2026-07-28")
	ch := sleepStream(t, r, 0.6)
	if _, ok := nextEvent(t, ch); !ok {
		t.Fatal("no event")
	}
	f.gw.EndStreamsForShutdown()
	events, last := 1, ""
	for {
		ev, ok := nextEvent(t, ch)
		if !ok {
			break
		}
		events++
		if ev.id != "" || ev.retry != "" || !ev.data {
			t.Fatalf("event %+v on a 2026-07-28 stream", ev)
		}
		last = ev.text
	}
	// However many ticks the replica's ticker dropped, the stream ends
	// with the call's result, not before it.
	if !strings.Contains(last, `"result"`) || !strings.Contains(last, "slept 0.6s") {
		t.Fatalf("%d events, the last %q: the stream was cut before the result", events, last)
	}
}

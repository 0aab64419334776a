package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptrace"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// waitGauge waits until the gauge reads want.
func waitGauge(t *testing.T, what string, read func() float64, want float64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for read() != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s is %v, want %v", what, read(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// relayGoroutines counts the goroutines inside a stream's relay.
func relayGoroutines() int {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "gateway.(*pumping).run") || strings.Contains(g, "gateway.(*Gateway).relayStream") {
			n++
		}
	}
	return n
}

// TestStandaloneStreamParks: a legacy session's GET stream that has
// nothing to say waits with no goroutine of its own, relays each event the
// replica sends (waking, then parking again), and when its client goes
// the stream ends as any other: the gauges back to zero and its access
// line written.
func TestStandaloneStreamParks(t *testing.T) {
	if testServer() != "h1" || runtime.GOOS != "linux" {
		t.Skip("streams park behind the h1 server on Linux")
	}
	f := startFleet(t, 1, &Options{KeepAlive: -1})
	parked := func() float64 { return testutil.ToFloat64(f.gw.metrics.parked) }
	open := func() float64 { return testutil.ToFloat64(f.gw.metrics.streams) }
	r := newRaw(t, f.url(), "2025-11-25")
	r.initialize()
	req, _ := http.NewRequest(http.MethodGet, r.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", r.session)
	req.Header.Set("Mcp-Protocol-Version", r.version)
	resp, err := r.client.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET: %v %v", err, resp)
	}
	ch := lines(resp.Body)
	waitGauge(t, "parked streams", parked, 1)
	if n := relayGoroutines(); n != 0 {
		t.Fatalf("%d goroutines in the relay of a parked stream, want none", n)
	}
	for i, tool := range []string{"brand-new", "newer-still"} {
		f.servers[0].AddTool(tool)
		deadline := time.After(10 * time.Second)
	read:
		for {
			select {
			case l, ok := <-ch:
				if !ok {
					t.Fatalf("event %d: the stream ended", i)
				}
				if strings.Contains(l, "notifications/tools/list_changed") {
					break read
				}
			case <-deadline:
				t.Fatalf("event %d: no list_changed on the stream", i)
			}
		}
		waitGauge(t, "parked streams after an event", parked, 1)
	}
	if open() != 1 {
		t.Fatalf("open streams %v, want 1", open())
	}
	resp.Body.Close() // the client goes: the watch cancels, the replica's side closes, the stream wakes and ends
	waitGauge(t, "open streams", open, 0)
	waitGauge(t, "parked streams", parked, 0)
	if n := relayGoroutines(); n != 0 {
		t.Fatalf("%d goroutines in a relay after the stream ended", n)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(f.logs.String(), `"http_method":"GET"`) {
		if time.Now().After(deadline) {
			t.Fatalf("no access line for the GET stream in %s", f.logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	var line struct{ Events int }
	if err := json.Unmarshal([]byte(accessLineOf(f.logs.String(), `"http_method":"GET"`)), &line); err != nil || line.Events < 2 {
		t.Errorf("the stream's access line counts %d events (%v), want the 2 relayed at least", line.Events, err)
	}
}

func accessLineOf(logs, marker string) string {
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, marker) {
			return l
		}
	}
	return ""
}

// TestParkedStreamKeepsItsConnection: a parked stream that the replica
// ends (the session deleted) ends its response properly, and the client's
// connection carries the next request.
func TestParkedStreamKeepsItsConnection(t *testing.T) {
	if testServer() != "h1" || runtime.GOOS != "linux" {
		t.Skip("streams park behind the h1 server on Linux")
	}
	f := startFleet(t, 1, &Options{KeepAlive: -1})
	r := newRaw(t, f.url(), "2025-11-25")
	r.initialize()
	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(client.CloseIdleConnections)
	var conns []string
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { conns = append(conns, i.Conn.LocalAddr().String()) }}
	ctx := httptrace.WithClientTrace(context.Background(), trace)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", r.session)
	req.Header.Set("Mcp-Protocol-Version", r.version)
	resp, err := client.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET: %v %v", err, resp)
	}
	waitGauge(t, "parked streams", func() float64 { return testutil.ToFloat64(f.gw.metrics.parked) }, 1)
	del, _ := http.NewRequest(http.MethodDelete, r.url, nil)
	del.Header.Set("Mcp-Session-Id", r.session)
	del.Header.Set("Mcp-Protocol-Version", r.version)
	dresp, err := r.client.Do(del)
	if err != nil {
		t.Fatal(err)
	}
	dresp.Body.Close()
	done := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, resp.Body); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the stream ended badly: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not end after its session was deleted")
	}
	resp.Body.Close()
	req2, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.front.URL+"/healthz", nil)
	resp2, err := client.Do(req2)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp2.Body)
	resp2.Body.Close()
	if resp2.StatusCode != 200 {
		t.Fatalf("healthz after the stream: %d", resp2.StatusCode)
	}
	if len(conns) != 2 || conns[0] != conns[1] {
		t.Fatalf("connections %v: the stream's connection did not carry the next request", conns)
	}
}

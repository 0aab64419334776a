package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// silentReplica answers initialize and notifications as dyingReplica
// does, and a tools/call as a replica that stopped answering without
// closing anything: a progress event first when progress is set, then
// nothing at all until the test ends. holding says when it holds a call.
type silentReplica struct {
	dying    *dyingReplica
	progress bool
	holding  chan struct{}
	release  chan struct{}
}

func (s *silentReplica) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var m struct {
		Method string `json:"method"`
	}
	json.Unmarshal(body, &m)
	if m.Method != "tools/call" {
		r.Body = io.NopCloser(bytes.NewReader(body))
		s.dying.ServeHTTP(w, r)
		return
	}
	if s.progress {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `event: message`+"\n"+`data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}`+"\n\n")
		http.NewResponseController(w).Flush()
	}
	s.holding <- struct{}{}
	select {
	case <-r.Context().Done():
	case <-s.release:
	}
	// A replica that noticed its connection end would not answer the call
	// either: no answer at all, not net/http's empty 200.
	panic(http.ErrAbortHandler)
}

// TestReplicaDownEndsItsCalls: a replica that holds a call and goes
// silent, mid-stream or before any answer, in both eras, is answered with
// the replica_lost error as soon as its health checks take it down (the
// checker's OnChange, played here by hand), not at the client's timeout;
// a replica that only starts draining keeps its calls.
func TestReplicaDownEndsItsCalls(t *testing.T) {
	for _, progress := range []bool{true, false} {
		for _, version := range []string{"2025-11-25", "2026-07-28"} {
			name := "before any answer, " + version
			if progress {
				name = "mid-stream, " + version
			}
			t.Run(name, func(t *testing.T) {
				s := &silentReplica{dying: &dyingReplica{}, progress: progress, holding: make(chan struct{}, 1), release: make(chan struct{})}
				srv := httptest.NewServer(s)
				t.Cleanup(srv.Close)
				t.Cleanup(func() { close(s.release) }) // before srv.Close, which waits for the handler
				gw := startGatewayOn(t, []upstream.Spec{{Name: "silent", URL: srv.URL + "/mcp"}}, &Options{KeepAlive: -1}, io.Discard)
				front := newFront(gw)
				t.Cleanup(front.Close)
				r := newRaw(t, front.URL+"/mcp", version)
				if version == "2025-11-25" {
					r.initialize()
				}
				answered := make(chan time.Time, 1)
				var data string
				go func() {
					defer close(answered)
					resp := r.post(context.Background(), 5, "tools/call", sleepCall, nil)
					defer resp.Body.Close()
					if progress {
						evs, _ := readEvents(t, resp.Body)
						if len(evs) > 0 {
							data = evs[len(evs)-1].text
						}
					} else {
						b, _ := io.ReadAll(resp.Body)
						data = string(b)
					}
					answered <- time.Now()
				}()
				<-s.holding
				gw.HealthChanged("silent", upstream.StateUp, upstream.StateDraining)
				select {
				case <-answered:
					t.Fatal("a replica that starts draining had its call ended")
				case <-time.After(200 * time.Millisecond):
				}
				down := time.Now()
				gw.HealthChanged("silent", upstream.StateUp, upstream.StateDown)
				select {
				case at := <-answered:
					if waited := at.Sub(down); waited > lostBound {
						t.Errorf("the answer came %v after the replica went down", waited)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("no answer 5 s after the replica went down")
				}
				checkLost(t, data, "5", "silent")
			})
		}
	}
}

// TestDialAddr: the address the forwarders dial, which the set of
// connections is keyed by.
func TestDialAddr(t *testing.T) {
	for in, want := range map[string]string{
		"http://10.0.0.1:3000/mcp": "10.0.0.1:3000",
		"http://replica/mcp":       "replica:80",
		"https://replica/mcp":      "replica:443",
		"http://[fd00::1]/sse":     "[fd00::1]:80",
	} {
		u, err := url.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := dialAddr(u); got != want {
			t.Errorf("dialAddr(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestDownReplicaSweep: a call that goes to a replica already down (no
// replica is eligible, so it goes anyway) and finds it silent is answered
// with the replica_lost error within a few health-check intervals, by the
// sweep that the replica's going down started.
func TestDownReplicaSweep(t *testing.T) {
	const every = 100 * time.Millisecond
	s := &silentReplica{dying: &dyingReplica{}, progress: true, holding: make(chan struct{}, 1), release: make(chan struct{})}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(s.release) })
	gw := startGatewayOn(t, []upstream.Spec{{Name: "silent", URL: srv.URL + "/mcp"}}, &Options{KeepAlive: -1, HealthCheckInterval: every}, io.Discard)
	// Its health path answers 202, which is no health: down at the first check.
	checker, err := upstream.NewChecker(gw.fleet, &upstream.CheckOptions{Interval: every, Timeout: time.Second, OnChange: gw.HealthChanged})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = checker.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	rep := gw.fleet.Snapshot().Lookup("silent")
	for deadline := time.Now().Add(5 * time.Second); rep.State() != upstream.StateDown; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the replica is not down after 5 s of failed checks")
		}
	}
	front := newFront(gw)
	t.Cleanup(front.Close)
	r := newRaw(t, front.URL+"/mcp", "2026-07-28")
	start := time.Now()
	resp := r.post(context.Background(), 6, "tools/call", sleepCall, nil)
	defer resp.Body.Close()
	evs, _ := readEvents(t, resp.Body)
	if waited := time.Since(start); waited > 3*every+lostBound {
		t.Errorf("the call to the down replica was answered after %v, want within %v", waited, 3*every+lostBound)
	}
	if len(evs) == 0 {
		t.Fatal("no events")
	}
	checkLost(t, evs[len(evs)-1].text, "6", "silent")
	<-s.holding
}

// TestDownReplicaThatStillAnswersKeepsItsCalls: a replica whose checks
// fail while it still streams a call's progress keeps the call: only a
// connection silent for a health-check interval is ended.
func TestDownReplicaThatStillAnswersKeepsItsCalls(t *testing.T) {
	started := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		f := w.(http.Flusher)
		started <- struct{}{}
		for i := range 16 { // 800 ms of progress, every 50 ms
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":%d}}\n\n", i)
			f.Flush()
			time.Sleep(50 * time.Millisecond)
		}
		fmt.Fprint(w, "data: {\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}}\n\n")
	}))
	t.Cleanup(srv.Close)
	// An interval of twenty progress gaps: a busy machine cannot make the
	// stream look silent for one.
	gw := startGatewayOn(t, []upstream.Spec{{Name: "flaky", URL: srv.URL + "/mcp"}}, &Options{KeepAlive: -1, HealthCheckInterval: time.Second}, io.Discard)
	front := newFront(gw)
	t.Cleanup(front.Close)
	r := newRaw(t, front.URL+"/mcp", "2026-07-28")
	answered := make(chan string, 1)
	go func() {
		resp := r.post(context.Background(), 5, "tools/call", sleepCall, nil)
		defer resp.Body.Close()
		evs, _ := readEvents(t, resp.Body)
		last := ""
		if len(evs) > 0 {
			last = evs[len(evs)-1].text
		}
		answered <- last
	}()
	<-started
	time.Sleep(300 * time.Millisecond)
	gw.HealthChanged("flaky", upstream.StateUp, upstream.StateDown)
	select {
	case last := <-answered:
		if !strings.Contains(last, `"text":"done"`) {
			t.Errorf("the call of a replica that still answered was ended: %s", last)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no answer")
	}
}

// TestDrainedReplicaGoneDownKeepsItsCalls: a replica that drained before
// it went down (it stopped taking connections, as a rolling deploy does)
// finishes the calls it holds: the gateway ends none, however silent.
func TestDrainedReplicaGoneDownKeepsItsCalls(t *testing.T) {
	s := &silentReplica{dying: &dyingReplica{}, holding: make(chan struct{}, 1), release: make(chan struct{})}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	gw := startGatewayOn(t, []upstream.Spec{{Name: "silent", URL: srv.URL + "/mcp"}}, &Options{KeepAlive: -1, HealthCheckInterval: 50 * time.Millisecond}, io.Discard)
	front := newFront(gw)
	t.Cleanup(front.Close)
	r := newRaw(t, front.URL+"/mcp", "2026-07-28")
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		resp := r.post(context.Background(), 5, "tools/call", sleepCall, nil)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}()
	// First of the cleanups: the replica answers, and the call ends
	// before the gateway and the replica close.
	t.Cleanup(func() { close(s.release); <-answered })
	<-s.holding
	gw.HealthChanged("silent", upstream.StateUp, upstream.StateDraining)
	time.Sleep(150 * time.Millisecond) // three intervals of silence
	gw.HealthChanged("silent", upstream.StateDraining, upstream.StateDown)
	select {
	case <-answered:
		t.Fatal("the call of a replica that drained before it went down was ended")
	case <-time.After(500 * time.Millisecond): // ten intervals of the sweep
	}
}

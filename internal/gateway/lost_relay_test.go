package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/upstream"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// A replica that goes away mid-call, faked at the HTTP level: the gateway
// must answer the call itself, at once, with the replica_lost error.

// lostBound is how long after the cut the client may wait for its answer.
// The gateway answers in the same pass that reads the cut (milliseconds);
// the bound is the contract ("well under a second"), with room for a
// loaded machine.
const lostBound = time.Second

// dyingReplica answers initialize and notifications as a replica would,
// and every other request as fault says, then goes away: it closes its
// connection with no end to the answer (as a killed process's kernel
// does), and sends the time of the cut on cut.
type dyingReplica struct {
	fault string        // sse_cut, drop, json_cut, batch_cut, own_ids_end
	hold  time.Duration // before the answer
	after time.Duration // between what it sent and the cut; 50 ms when 0
	cut   chan time.Time
}

func startDying(t *testing.T, fault string, hold time.Duration) (*dyingReplica, string) {
	t.Helper()
	d := &dyingReplica{fault: fault, hold: hold, cut: make(chan time.Time, 8)}
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	return d, srv.URL + "/mcp"
}

func (d *dyingReplica) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	batch := bytes.HasPrefix(bytes.TrimSpace(body), []byte("["))
	if !batch {
		json.Unmarshal(body, &m)
	}
	switch {
	case m.Method == "initialize":
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", "own-session")
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"dying","version":"1"}}}`)
		return
	case !batch && len(m.ID) == 0:
		w.WriteHeader(http.StatusAccepted)
		return
	}
	time.Sleep(d.hold)
	switch d.fault {
	case "sse_cut":
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `event: message`+"\n"+`data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}`+"\n\n")
		// Half an event, as a replica killed mid-write leaves it.
		io.WriteString(w, `data: {"jsonrpc":"2.0","id":`)
	case "batch_cut":
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n")
	case "own_ids_end":
		// SEP-1699: a replica with an event store of its own ends the
		// stream in good order, to be polled; it is not lost.
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "id: own-1\nretry: 100\ndata: \n\n")
		d.cut <- time.Now()
		return
	case "json_cut":
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "400")
		w.WriteHeader(http.StatusOK)
	}
	d.die(w)
}

// die flushes what was written and closes the connection under it.
func (d *dyingReplica) die(w http.ResponseWriter) {
	rc := http.NewResponseController(w)
	rc.Flush()
	after := d.after
	if after == 0 {
		after = 50 * time.Millisecond // the gateway relays what came first
	}
	time.Sleep(after)
	conn, _, err := rc.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	d.cut <- time.Now()
	conn.Close()
}

// readEvents reads an SSE body to its end, noting when each event
// arrived.
func readEvents(t *testing.T, body io.Reader) ([]sseEvent, []time.Time) {
	t.Helper()
	ch := lines(body)
	var evs []sseEvent
	var at []time.Time
	for {
		ev, ok := nextEvent(t, ch)
		if !ok {
			return evs, at
		}
		ev.text = strings.TrimSpace(ev.text)
		evs, at = append(evs, ev), append(at, time.Now())
	}
}

// checkLost checks that data is the replica_lost answer to id.
func checkLost(t *testing.T, data, id, replica string) {
	t.Helper()
	var a lostAnswer
	if err := json.Unmarshal([]byte(data), &a); err != nil {
		t.Fatalf("answer %q: %v", data, err)
	}
	d := a.Error.Data
	if string(a.ID) != id || a.Error.Code != -32603 || d.Reason != "replica_lost" || d.Replica != replica || d.MayHaveRun == nil || !*d.MayHaveRun {
		t.Errorf("answer %s, want the replica_lost error of %s for id %s, may_have_run true", data, replica, id)
	}
}

// sleepCall is the arguments of a tools/call the dying replica takes.
var sleepCall = map[string]any{"name": "sleep", "arguments": map[string]any{"seconds": 8, "progress_every": 0.2}, "_meta": map[string]any{"progressToken": "p"}}

// TestReplicaLostMidStream: a replica that cuts its SSE stream after a
// progress event leaves the client with the replica_lost error for its
// call at once, in both eras; the 2025-11-25 stream keeps the error, so
// that a resume from the progress event finds it; the metric counts it.
func TestReplicaLostMidStream(t *testing.T) {
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			d, u := startDying(t, "sse_cut", 0)
			gw := startGatewayOn(t, []upstream.Spec{{Name: "dying", URL: u}}, &Options{KeepAlive: -1}, io.Discard)
			front := newFront(gw)
			t.Cleanup(front.Close)
			r := newRaw(t, front.URL+"/mcp", version)
			if version == "2025-11-25" {
				r.initialize()
			}
			resp := r.post(context.Background(), 3, "tools/call", sleepCall, nil)
			defer resp.Body.Close()
			evs, at := readEvents(t, resp.Body)
			cut := <-d.cut
			if len(evs) == 0 {
				t.Fatal("no events")
			}
			last := evs[len(evs)-1]
			checkLost(t, last.text, "3", "dying")
			if waited := at[len(at)-1].Sub(cut); waited > lostBound {
				t.Errorf("the answer came %v after the cut", waited)
			}
			if !strings.Contains(evs[len(evs)-2].text, "notifications/progress") {
				t.Errorf("the event before the answer is %q, want the progress", evs[len(evs)-2].text)
			}
			if n := testutil.ToFloat64(gw.metrics.replicaLost.WithLabelValues("dying")); n != 1 {
				t.Errorf("mcpfleet_replica_lost_calls_total{replica=dying} = %v, want 1", n)
			}
			if version == "2025-11-25" {
				replayed := resumeFrom(t, r, evs[len(evs)-2].id)
				if len(replayed) != 1 || replayed[0] != last {
					t.Errorf("a resume from the progress event replayed %+v, want the error event %+v", replayed, last)
				}
			}
		})
	}
}

// resumeFrom resumes a legacy session's stream after event id.
func resumeFrom(t *testing.T, r *raw, id string) []sseEvent {
	t.Helper()
	get, _ := http.NewRequest(http.MethodGet, r.url, nil)
	get.Header.Set("Accept", "text/event-stream")
	get.Header.Set("Mcp-Session-Id", r.session)
	get.Header.Set("Mcp-Protocol-Version", r.version)
	get.Header.Set("Last-Event-ID", id)
	resp, err := r.client.Do(get)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("resume: %s %s", resp.Status, b)
	}
	evs, _ := readEvents(t, resp.Body)
	return evs
}

// TestReplicaLostBeforeAnyAnswer: a replica that closes the connection
// before answering at all, or after the head of a JSON answer, leaves the
// client with the replica_lost error: as the JSON answer (502) when
// nothing was sent yet, in the stream the gateway opened early otherwise.
func TestReplicaLostBeforeAnyAnswer(t *testing.T) {
	tests := []struct {
		name, fault string
		hold        time.Duration
		keepAlive   time.Duration
		stream      bool
	}{
		{"drop, json", "drop", 0, -1, false},
		{"drop, early stream", "drop", 400 * time.Millisecond, 100 * time.Millisecond, true},
		{"json head then cut", "json_cut", 0, -1, false},
		{"json head then cut, early stream", "json_cut", 400 * time.Millisecond, 100 * time.Millisecond, true},
	}
	for _, tt := range tests {
		for _, version := range []string{"2025-11-25", "2026-07-28"} {
			t.Run(tt.name+", "+version, func(t *testing.T) {
				d, u := startDying(t, tt.fault, tt.hold)
				gw := startGatewayOn(t, []upstream.Spec{{Name: "dying", URL: u}}, &Options{KeepAlive: tt.keepAlive}, io.Discard)
				front := newFront(gw)
				t.Cleanup(front.Close)
				r := newRaw(t, front.URL+"/mcp", version)
				if version == "2025-11-25" {
					r.initialize()
				}
				resp := r.post(context.Background(), 4, "tools/call", sleepCall, nil)
				defer resp.Body.Close()
				var data string
				var got time.Time
				if tt.stream {
					evs, at := readEvents(t, resp.Body)
					if len(evs) == 0 {
						t.Fatal("no events")
					}
					data, got = evs[len(evs)-1].text, at[len(at)-1]
				} else {
					b, _ := io.ReadAll(resp.Body)
					data, got = string(b), time.Now()
					if resp.StatusCode != http.StatusBadGateway || resp.Header.Get("Content-Type") != "application/json" {
						t.Errorf("answer %s %q, want 502 JSON", resp.Status, resp.Header.Get("Content-Type"))
					}
				}
				checkLost(t, data, "4", "dying")
				if waited := got.Sub(<-d.cut); waited > lostBound {
					t.Errorf("the answer came %v after the cut", waited)
				}
				if n := testutil.ToFloat64(gw.metrics.replicaLost.WithLabelValues("dying")); n != 1 {
					t.Errorf("mcpfleet_replica_lost_calls_total{replica=dying} = %v, want 1", n)
				}
			})
		}
	}
}

// TestReplicaLostBatch: a 2025-03-26 batch whose replica answered one of
// its two requests and went gets the error for the other alone; one whose
// replica went before any answer gets an array with an error for each.
func TestReplicaLostBatch(t *testing.T) {
	const body = `[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sleep"}},{"jsonrpc":"2.0","method":"notifications/x"}]`
	post := func(t *testing.T, u string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-03-26")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	t.Run("one answered", func(t *testing.T) {
		d, u := startDying(t, "batch_cut", 0)
		gw := startGatewayOn(t, []upstream.Spec{{Name: "dying", URL: u}}, &Options{KeepAlive: -1}, io.Discard)
		front := newFront(gw)
		t.Cleanup(front.Close)
		evs, _ := readEvents(t, post(t, front.URL+"/mcp").Body)
		<-d.cut
		if len(evs) != 2 {
			t.Fatalf("events %+v, want the answer to 1 and the error for 2", evs)
		}
		checkLost(t, evs[1].text, "2", "dying")
		if n := testutil.ToFloat64(gw.metrics.replicaLost.WithLabelValues("dying")); n != 1 {
			t.Errorf("counted %v lost calls, want 1", n)
		}
	})
	t.Run("none answered", func(t *testing.T) {
		d, u := startDying(t, "drop", 0)
		gw := startGatewayOn(t, []upstream.Spec{{Name: "dying", URL: u}}, &Options{KeepAlive: -1}, io.Discard)
		front := newFront(gw)
		t.Cleanup(front.Close)
		resp := post(t, front.URL+"/mcp")
		<-d.cut
		var answers []json.RawMessage
		b, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(b, &answers); err != nil || len(answers) != 2 {
			t.Fatalf("answer %s %s, want an array of two errors", resp.Status, b)
		}
		checkLost(t, string(answers[0]), "1", "dying")
		checkLost(t, string(answers[1]), "2", "dying")
		if n := testutil.ToFloat64(gw.metrics.replicaLost.WithLabelValues("dying")); n != 2 {
			t.Errorf("counted %v lost calls, want 2", n)
		}
	})
}

// dyingSSEReplica is a 2024-11-05 replica that answers its session's
// messages on the stream (a ping at once, a tools/call never, after a
// progress notification) and cuts the stream when told.
func dyingSSEReplica(t *testing.T) (url string, cut chan chan time.Time) {
	t.Helper()
	cut = make(chan chan time.Time)
	msgs := make(chan string, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			b, _ := io.ReadAll(r.Body)
			json.Unmarshal(b, &m)
			if m.Method == "resources/read" { // the POST's connection drops
				if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
					conn.Close()
				}
				return
			}
			w.WriteHeader(http.StatusAccepted)
			if m.Method == "ping" {
				msgs <- `{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{}}`
			} else {
				msgs <- `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}`
			}
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: endpoint\ndata: /message?sessionId=own\n\n")
		rc := http.NewResponseController(w)
		rc.Flush()
		for {
			select {
			case m := <-msgs:
				io.WriteString(w, "event: message\ndata: "+m+"\n\n")
				rc.Flush()
			case at := <-cut:
				conn, _, _ := rc.Hijack()
				at <- time.Now()
				conn.Close()
				return
			case <-r.Context().Done():
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp", cut
}

// TestReplicaLostSSETransport: when a 2024-11-05 session's replica goes,
// the calls POSTed through this gateway and not answered yet get the
// replica_lost error on the session's stream, at once; answered ones get
// nothing more. A message whose POST the replica drops before answering
// gets the error as the POST's answer, and not again on the stream.
func TestReplicaLostSSETransport(t *testing.T) {
	u, cut := dyingSSEReplica(t)
	gws, fronts, _ := startGateways(t, 1, []upstream.Spec{{Name: "sse-dying", URL: u}}, sharedSecretOptions(t))
	base := fronts[0].URL
	ch, endpoint, _ := sseOpen(t, base)
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":4,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"sleep","_meta":{"progressToken":"p"}}}`,
	} {
		if status, body := ssePost(t, base, endpoint, msg); status != http.StatusAccepted {
			t.Fatalf("POST %s: %d %s", msg, status, body)
		}
	}
	status, body := ssePost(t, base, endpoint, `{"jsonrpc":"2.0","id":9,"method":"resources/read","params":{"uri":"x:y"}}`)
	if status != http.StatusBadGateway {
		t.Errorf("a dropped POST: %d, want 502", status)
	}
	checkLost(t, strings.TrimSpace(body), "9", "sse-dying")
	for range 2 { // the ping's answer, the call's progress
		if _, ok := nextEvent(t, ch); !ok {
			t.Fatal("the stream ended early")
		}
	}
	at := make(chan time.Time)
	cut <- at
	cutAt := <-at
	ev, ok := nextEvent(t, ch)
	if !ok {
		t.Fatal("the stream ended with no answer for the call")
	}
	if waited := time.Since(cutAt); waited > lostBound {
		t.Errorf("the answer came %v after the cut", waited)
	}
	checkLost(t, strings.TrimSpace(ev.text), "5", "sse-dying")
	if ev, ok := nextEvent(t, ch); ok {
		t.Errorf("after the answer the stream went on with %+v", ev)
	}
	if n := testutil.ToFloat64(gws[0].metrics.replicaLost.WithLabelValues("sse-dying")); n != 2 {
		t.Errorf("counted %v lost calls, want 2", n)
	}
}

// TestReplicaEndingItsStreamIsNotLost: a 2025-11-25 replica that keeps its
// own event IDs and ends a stream in good order before the final response
// (SEP-1699's server-side disconnect) is not lost: its client resumes at
// the replica, and the gateway answers nothing in its place.
func TestReplicaEndingItsStreamIsNotLost(t *testing.T) {
	d, u := startDying(t, "own_ids_end", 0)
	gw := startGatewayOn(t, []upstream.Spec{{Name: "polled", URL: u}}, &Options{KeepAlive: -1}, io.Discard)
	front := newFront(gw)
	t.Cleanup(front.Close)
	r := newRaw(t, front.URL+"/mcp", "2025-11-25")
	r.initialize()
	resp := r.post(context.Background(), 3, "tools/call", sleepCall, nil)
	defer resp.Body.Close()
	evs, _ := readEvents(t, resp.Body)
	<-d.cut
	for _, ev := range evs {
		if strings.Contains(ev.text, "replica_lost") {
			t.Errorf("the gateway answered a polled stream as lost: %+v", evs)
		}
	}
	if n := testutil.ToFloat64(gw.metrics.replicaLost.WithLabelValues("polled")); n != 0 {
		t.Errorf("counted %v lost calls, want 0", n)
	}
}

// TestReplicaLostAfterItsClientLeft: a 2025-11-25 client that left its
// stream and resumes it after its replica went finds the error there.
func TestReplicaLostAfterItsClientLeft(t *testing.T) {
	d, u := startDying(t, "sse_cut", 0)
	d.after = 500 * time.Millisecond
	gw := startGatewayOn(t, []upstream.Spec{{Name: "dying", URL: u}}, &Options{KeepAlive: -1}, io.Discard)
	front := newFront(gw)
	t.Cleanup(front.Close)
	r := newRaw(t, front.URL+"/mcp", "2025-11-25")
	r.initialize()
	resp := r.post(context.Background(), 6, "tools/call", sleepCall, nil)
	ch := lines(resp.Body)
	var progress sseEvent
	for !strings.Contains(progress.text, "notifications/progress") {
		ev, ok := nextEvent(t, ch)
		if !ok {
			t.Fatal("the stream ended before the progress")
		}
		progress = ev
	}
	resp.Body.Close() // the client leaves; the call goes on into the buffer
	<-d.cut
	evs := resumeFrom(t, r, progress.id)
	if len(evs) != 1 {
		t.Fatalf("the resume replayed %+v, want the error alone", evs)
	}
	checkLost(t, evs[0].text, "6", "dying")
	if n := testutil.ToFloat64(gw.metrics.replicaLost.WithLabelValues("dying")); n != 1 {
		t.Errorf("counted %v lost calls, want 1", n)
	}
}

package gateway

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"slices"
	"sync"
	"testing"
	"time"
)

// startH2Front serves the gateway over TLS with net/http's server and
// HTTP/2, as mcpfleet serve does with server: std, and returns its MCP URL
// and a client that speaks HTTP/2 only to it (one connection, reused).
func startH2Front(t *testing.T, gw *Gateway) (string, *http.Client) {
	t.Helper()
	ts := httptest.NewUnstartedServer(gw)
	ts.EnableHTTP2 = true
	ts.StartTLS()
	t.Cleanup(ts.Close)
	tr := ts.Client().Transport.(*http.Transport).Clone()
	tr.ForceAttemptHTTP2 = true
	tr.TLSClientConfig.NextProtos = []string{"h2"}
	t.Cleanup(tr.CloseIdleConnections)
	return ts.URL + "/mcp", &http.Client{Transport: tr}
}

// TestEarlyStreamOverH2: when the gateway opens a silent call's SSE stream
// itself, an HTTP/2 client gets the headers and the first DATA frame (the
// keep-alive comment) together, not the headers alone until the next event.
func TestEarlyStreamOverH2(t *testing.T) {
	// Wide enough that a loaded machine under the race detector can tell a
	// comment sent with the headers (at once) from the next (an interval on).
	const keepAlive = 800 * time.Millisecond
	f := startFleet(t, 1, &Options{KeepAlive: keepAlive})
	url, client := startH2Front(t, f.gw)
	r := &raw{t: t, url: url, version: "2026-07-28", client: client}
	start := time.Now()
	resp := r.post(context.Background(), 1, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"seconds": 3.2}}, nil)
	defer resp.Body.Close()
	headers := time.Since(start)
	if resp.ProtoMajor != 2 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("answer %s %q, want HTTP/2 text/event-stream", resp.Proto, resp.Header.Get("Content-Type"))
	}
	if headers > 2400*time.Millisecond {
		t.Fatalf("headers came %v into a 3.2 s call: the stream was not opened early", headers)
	}
	buf := make([]byte, 64)
	n, err := resp.Body.Read(buf)
	first := time.Since(start) - headers
	if err != nil || !bytes.HasPrefix(buf[:n], []byte(": keep-alive")) {
		t.Fatalf("first read: %q, %v; want the keep-alive comment", buf[:n], err)
	}
	t.Logf("headers %v into the call, the first DATA frame %v after them", headers, first)
	// The next comment is due one interval later: a first read that waited
	// for it would mean the headers went out alone.
	if first > keepAlive/2 {
		t.Errorf("the first DATA frame came %v after the headers, want it with them", first)
	}
	rest, _ := io.ReadAll(resp.Body)
	if !bytes.Contains(rest, []byte(`"result"`)) {
		t.Errorf("the stream ended without the result: %q", rest)
	}
}

// TestResetStreamOverH2 is TestDroppedStreamSemantics over HTTP/2: a client
// that resets a 2026-07-28 call's stream (RST_STREAM, its connection kept)
// cancels the call before it mutates; a legacy call runs on. The next
// request reuses the connection, so what the gateway saw was a reset, not
// a closed connection.
func TestResetStreamOverH2(t *testing.T) {
	tests := []struct {
		version string
		want    int
	}{
		{"2026-07-28", 0},
		{"2025-11-25", 1},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			f := startFleet(t, 3, &Options{KeepAlive: 200 * time.Millisecond})
			url, client := startH2Front(t, f.gw)
			r := &raw{t: t, url: url, version: tt.version, client: client}
			if tt.version == "2025-11-25" {
				r.initialize()
			}
			key := "h2-" + tt.version
			ctx, reset := context.WithCancel(context.Background())
			resp := r.post(ctx, 3, "tools/call", map[string]any{
				"name": "mutate", "arguments": map[string]any{"key": key, "seconds": 3, "at": 0.5},
			}, nil)
			if resp.StatusCode != 200 || resp.ProtoMajor != 2 {
				t.Fatalf("answer %s %d, want HTTP/2 200", resp.Proto, resp.StatusCode)
			}
			// The call runs; its mutation is due at 1.5 s, which leaves the
			// reset more than a second to reach the replica on a loaded
			// machine under the race detector.
			time.Sleep(300 * time.Millisecond)
			reset()
			resp.Body.Close()
			time.Sleep(3 * time.Second) // past the call's end
			if got := f.count(key); got != tt.want {
				t.Errorf("after the client reset the stream, %s mutated %d times, want %d", key, got, tt.want)
			}
			var reused bool
			trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}
			resp = r.post(httptrace.WithClientTrace(context.Background(), trace), 4, "tools/call",
				map[string]any{"name": "whoami", "arguments": map[string]any{}}, nil)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !reused {
				t.Errorf("the request after the reset: status %d, connection reused %v; want 200 on the same connection", resp.StatusCode, reused)
			}
		})
	}
}

// TestBodyReadTimeout: a body that stops coming is cut at BodyReadTimeout
// (400, "reading request body failed"), over HTTP/1.1 and HTTP/2, and the
// bound is over once the body is read: a call that runs past it is
// answered, and so is the next request on the same connection.
func TestBodyReadTimeout(t *testing.T) {
	const timeout = 300 * time.Millisecond
	f := startFleet(t, 1, &Options{BodyReadTimeout: timeout})
	h2url, h2client := startH2Front(t, f.gw)
	for _, tc := range []struct {
		name, url string
		client    *http.Client
	}{
		{"h1", f.url(), &http.Client{}},
		{"h2", h2url, h2client},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr, pw := io.Pipe()
			defer pw.Close()
			body := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
			req, _ := http.NewRequest(http.MethodPost, tc.url, pr)
			req.ContentLength = int64(len(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			go func() { _, _ = pw.Write([]byte(body[:10])) }() // then nothing
			start := time.Now()
			resp, err := tc.client.Do(req)
			if err != nil {
				t.Fatalf("a stalled body: %v", err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			took := time.Since(start)
			if resp.StatusCode != http.StatusBadRequest || !bytes.Contains(got, []byte("reading request body failed")) {
				t.Fatalf("a stalled body: %d %s", resp.StatusCode, got)
			}
			if took < timeout || took > timeout+5*time.Second {
				t.Errorf("a stalled body was cut after %v, want %v", took, timeout)
			}
			// A call that outlasts the body's bound, on the same client.
			r := &raw{t: t, url: tc.url, version: "2026-07-28", client: tc.client}
			resp = r.post(context.Background(), 2, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"seconds": 2 * timeout.Seconds()}}, nil)
			got, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !bytes.Contains(got, []byte(`"result"`)) {
				t.Errorf("a call past the body's bound: %d %s", resp.StatusCode, got)
			}
		})
	}
}

// deadlineRecorder is a ResponseWriter that records the read deadlines a
// ResponseController sets on it.
type deadlineRecorder struct {
	http.ResponseWriter
	mu  sync.Mutex
	set []time.Time
}

func (d *deadlineRecorder) SetReadDeadline(t time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.set = append(d.set, t)
	return nil
}

func (d *deadlineRecorder) deadlines() []time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.set)
}

// TestBodyTimer: a body read in time sets no deadline at all, also on a
// timer taken again from the pool; a late one gets a deadline in the past,
// lifted after a body read whole and kept after a failed read.
func TestBodyTimer(t *testing.T) {
	for range 3 { // in time: no deadline, the timer pooled and reused
		w := &deadlineRecorder{}
		armLate(w, readDeadline, time.Hour).disarm(true)
		if d := w.deadlines(); len(d) != 0 {
			t.Fatalf("a body read in time set deadlines %v", d)
		}
	}
	for _, read := range []bool{false, true} {
		w := &deadlineRecorder{}
		bt := armLate(w, readDeadline, time.Millisecond)
		deadline := time.Now().Add(10 * time.Second)
		for len(w.deadlines()) == 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		bt.disarm(read)
		d := w.deadlines()
		if len(d) == 0 || !d[0].Before(time.Now()) {
			t.Fatalf("a late body: deadlines %v, want one in the past", d)
		}
		if read && (len(d) != 2 || !d[1].IsZero()) {
			t.Errorf("a late body read whole: deadlines %v, want the past one lifted", d)
		}
		if !read && len(d) != 1 {
			t.Errorf("a late body that failed: deadlines %v, want the past one kept", d)
		}
	}
}

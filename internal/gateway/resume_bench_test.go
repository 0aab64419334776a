package gateway

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
	"github.com/mcpfleet/mcpfleet/internal/session"
	"github.com/mcpfleet/mcpfleet/internal/sse"
	"github.com/mcpfleet/mcpfleet/internal/streams"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// progressStream is n progress events as a replica sends them.
func progressStream(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"p\",\"message\":\"slept %d\",\"progress\":%d,\"total\":100}}\n\n", i, i)
	}
	return b.Bytes()
}

// BenchmarkRelayLegacyStream: the relay's cost per event of a legacy POST
// stream, as it was (plain) and with sealed IDs and the kept copy (sealed).
func BenchmarkRelayLegacyStream(b *testing.B) {
	g := startGatewayOn(b, []upstream.Spec{{Name: "replica-a", URL: "http://127.0.0.1:1/mcp"}}, &Options{KeepAlive: -1}, io.Discard)
	body := progressStream(100)
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	q := &request{era: mcpmsg.EraLegacy, sessionID: "sealed-session"}
	for _, sealed := range []bool{false, true} {
		b.Run(map[bool]string{false: "plain", true: "sealed"}[sealed], func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				rec := &record{}
				if sealed {
					rec.tap = g.newStream(q.sessionID, session.EventID{Replica: "replica-a"}, true)
				}
				sw := sse.NewWriter(io.Discard, nopFlusher{}, 0)
				g.pump(sw, sse.NewReader(bytes.NewReader(body), 0), r, q, rec)
			}
		})
	}
}

type nopFlusher struct{}

func (nopFlusher) Flush() error { return nil }

// BenchmarkBufferedStreamMemory reports the heap a kept stream of 100
// progress events (with their sealed IDs) costs in the memory buffer.
func BenchmarkBufferedStreamMemory(b *testing.B) {
	g := startGatewayOn(b, []upstream.Spec{{Name: "replica-a", URL: "http://127.0.0.1:1/mcp"}}, &Options{KeepAlive: -1}, io.Discard)
	body := progressStream(100)
	const streamsN = 1000
	var block []byte
	for b.Loop() {
		m := streams.NewMemory(streams.Options{})
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range streamsN {
			s := g.newStream("sealed-session", session.EventID{Replica: "replica-a"}, false)
			rd := sse.NewReader(bytes.NewReader(body), 0)
			for p := uint64(1); ; p++ {
				ev, err := rd.Next()
				if err != nil {
					break
				}
				block = s.event(ev)
				_ = m.Append(context.Background(), fmt.Sprint(i), streams.Event{Pos: p, Data: block})
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapInuse-before.HeapInuse)/streamsN, "heap-B/stream")
		b.ReportMetric(float64(m.Stats().Bytes)/streamsN, "kept-B/stream")
		runtime.KeepAlive(m)
	}
}

// BenchmarkResumeMemory: a resume through the gateway (GET with
// Last-Event-ID) of a kept stream of 30 progress events and the result,
// from the request to the stream's last byte, and to its first event.
func BenchmarkResumeMemory(b *testing.B) {
	f := startFleet(b, 1, &Options{KeepAlive: 100 * time.Millisecond})
	benchResume(b, f.url())
}

// BenchmarkResumeRedis is the resume through another gateway process: the
// stream was kept by gateway A, moved to a real redis-server (Redis
// Streams) when its client went, and is replayed by gateway B.
func BenchmarkResumeRedis(b *testing.B) {
	p := startSharedPair(b)
	benchResume(b, p.url+"/mcp")
}

// benchResume cuts a legacy sleep with progress after its priming event,
// then resumes it from there at url, again and again, reporting the time to
// the first replayed event.
func benchResume(b *testing.B, url string) {
	r := newRaw(b, url, "2025-11-25")
	r.initialize()
	ctx, drop := context.WithCancel(context.Background())
	resp := r.post(ctx, 2, "tools/call", map[string]any{
		"name": "sleep", "arguments": map[string]any{"seconds": 0.31, "progress_every": 0.01}, "_meta": map[string]any{"progressToken": "p"},
	}, nil)
	first := ""
	for l := range lines(resp.Body) {
		if id, ok := strings.CutPrefix(l, "id: "); ok {
			first = id // the priming event's
			break
		}
	}
	drop() // the client goes; the gateway keeps the rest
	resp.Body.Close()
	time.Sleep(500 * time.Millisecond)
	// replay resumes from the priming event and returns the events it got,
	// the time to the first, and whether the last was the result.
	replay := func() (events int, toFirst time.Duration, result bool) {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Mcp-Session-Id", r.session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Last-Event-ID", first)
		start := time.Now()
		resp, err := r.client.Do(req)
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("resume: %v %v", resp.StatusCode, err)
		}
		defer resp.Body.Close()
		for l := range lines(resp.Body) {
			if strings.HasPrefix(l, "data: {") {
				if events == 0 {
					toFirst = time.Since(start)
				}
				events++
				result = strings.Contains(l, `"slept 0.31s`)
			}
		}
		return events, toFirst, result
	}
	// The replica's ticker may drop ticks on a busy machine, so the number
	// of events is not fixed: the first replay, untimed, ends with the
	// result once the call is over, and every later one must match it.
	want, _, result := replay()
	if !result || want < 3 {
		b.Fatalf("replayed %d events, the last the result: %v; want a few progress events and the result", want, result)
	}
	var toFirst time.Duration
	for b.Loop() {
		events, d, result := replay()
		toFirst += d
		if events != want || !result {
			b.Fatalf("replayed %d events, the last the result: %v; the first replay had %d and the result", events, result, want)
		}
	}
	b.ReportMetric(float64(toFirst.Microseconds())/float64(b.N), "us-to-first-event")
}

package gateway

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestNonReaderOverH2IsReset: an HTTP/2 client that stops reading one
// stream (its flow-control window full) has that stream reset once a write
// waits write_timeout, long before the call ends, while the connection
// and its other streams go on.
func TestNonReaderOverH2IsReset(t *testing.T) {
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			t.Parallel() // they mostly wait
			f := startFleet(t, 1, &Options{WriteTimeout: time.Second, KeepAlive: 200 * time.Millisecond})
			url, client := startH2Front(t, f.gw)
			tr := client.Transport.(*http.Transport)
			tr.HTTP2 = &http.HTTP2Config{MaxReceiveBufferPerStream: 64 << 10}
			r := &raw{t: t, url: url, version: version, client: client}
			if version == "2025-11-25" {
				r.initialize()
			}
			resp := r.post(context.Background(), 2, "tools/call", map[string]any{"name": "sleep",
				"arguments": map[string]any{"seconds": 60, "progress_every": 0.05, "pad": 2048}, "_meta": map[string]any{"progressToken": "p"}}, nil)
			if resp.ProtoMajor != 2 {
				t.Fatalf("%s, want HTTP/2", resp.Proto)
			}
			defer resp.Body.Close()
			// Not read: the window fills in under 2 s of progress, then a
			// write waits the write timeout. A legacy call runs on into the
			// buffer for a resume; the client's stream must be reset all
			// the same. Read after that: what the window held, then the
			// reset, at once; a stream still relayed would go on for the
			// call's minute.
			time.Sleep(5 * time.Second)
			done := make(chan error, 1)
			go func() {
				_, err := io.Copy(io.Discard, resp.Body)
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil {
					t.Error("the stream ended cleanly; want it reset")
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the non-reading HTTP/2 stream was not reset: 10 s into the call it still brings data")
			}
			if version == "2026-07-28" && testutil.ToFloat64(f.gw.metrics.streams) != 0 {
				t.Error("the reset 2026-07-28 stream is still relayed (its call should be cancelled)")
			}
			// The connection serves on.
			ok := r.post(context.Background(), 3, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}}, nil)
			ok.Body.Close()
			if ok.StatusCode != http.StatusOK {
				t.Errorf("a call after the reset: %d", ok.StatusCode)
			}
		})
	}
}

package gateway

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// BenchmarkForwardJSON measures the whole forwarding path on loopback: a
// 2026-07-28 tools/call through the gateway to a backend answering canned
// JSON. Compare with BenchmarkDirectJSON for the gateway's own cost.
func BenchmarkForwardJSON(b *testing.B) {
	backend := cannedBackend()
	defer backend.Close()
	fl, err := upstream.New([]upstream.Spec{{Name: "canned", URL: backend.URL + "/mcp"}})
	if err != nil {
		b.Fatal(err)
	}
	gw, err := New(fl, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer gw.Close()
	front := newFront(gw)
	defer front.Close()
	benchPost(b, front.URL+"/mcp")
}

// BenchmarkDirectJSON is the same request sent straight to the backend.
func BenchmarkDirectJSON(b *testing.B) {
	backend := cannedBackend()
	defer backend.Close()
	benchPost(b, backend.URL+"/mcp")
}

var cannedAnswer = []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}]}}`)

func cannedBackend() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(cannedAnswer)
	}))
}

func benchPost(b *testing.B, url string) {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
			req.Header.Set("Mcp-Method", "tools/call")
			req.Header.Set("Mcp-Name", "echo")
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	})
}

package gateway

import (
	"bytes"
	"io"
	"log"
	"net"
	"net/http"
	"testing"
)

// BenchmarkForwardH2 is BenchmarkForwardJSON over HTTP/2 (h2c, net/http's
// server and client, 16 calls in flight a core): every call's handler
// runs on a goroutine of its own, whose stack starts small and grows on
// the way through the gateway, and the body and answer pass through the
// server's serving goroutine. The client's work is in ns/op too: compare
// builds, not proxies.
func BenchmarkForwardH2(b *testing.B) {
	gw := rawGateway(b)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: CloseAfterChunked(gw), ErrorLog: log.New(io.Discard, "", 0), Protocols: new(http.Protocols)}
	srv.Protocols.SetUnencryptedHTTP2(true)
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	url := "http://" + ln.Addr().String() + "/mcp"
	b.ReportAllocs()
	b.SetParallelism(16) // calls in flight at once, on few connections, as h2load sends them
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(benchBody))
			req.Header = http.Header{
				"Content-Type":         {"application/json"},
				"Accept":               {"application/json, text/event-stream"},
				"Mcp-Protocol-Version": {"2026-07-28"},
				"Mcp-Method":           {"tools/call"},
				"Mcp-Name":             {"echo"},
				"Authorization":        {"Bearer tok-1"},
			}
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
}

package h1

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkReadRequestHead parses a 2026-07-28 tools/call head as a client
// sends it.
func BenchmarkReadRequestHead(b *testing.B) {
	const in = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Type: application/json\r\n" +
		"Accept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2026-07-28\r\n" +
		"Mcp-Method: tools/call\r\nMcp-Name: echo\r\nAuthorization: Bearer tok-123\r\nContent-Length: 180\r\n\r\n"
	sr := strings.NewReader(in)
	br := bufio.NewReader(sr)
	b.ReportAllocs()
	for b.Loop() {
		sr.Reset(in)
		br.Reset(sr)
		if _, err := ReadRequestHead(br, 64<<10); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkServe is one request and its JSON answer through h1.Server, on
// a kept-alive loopback connection, with a raw client: the server's cost
// per request, system calls included. BenchmarkServeNetHTTP is the same
// through net/http's server.
func BenchmarkServe(b *testing.B) {
	s := &Server{Handler: cannedHandler()}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = s.Serve(ln) }()
	defer s.Close()
	benchRaw(b, ln.Addr().String())
}

func BenchmarkServeNetHTTP(b *testing.B) {
	s := &http.Server{Handler: cannedHandler()}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = s.Serve(ln) }()
	defer s.Close()
	benchRaw(b, ln.Addr().String())
}

func cannedHandler() http.Handler {
	answer := []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}]}}`)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	})
}

// benchRaw sends POSTs one after another on one connection and reads each
// answer with ReadHead.
func benchRaw(b *testing.B, addr string) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`
	req := []byte("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n" + body)
	br := bufio.NewReader(c)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Write(req); err != nil {
			b.Fatal(err)
		}
		h, err := ReadHead(br)
		if err != nil {
			b.Fatal(err)
		}
		if h.Status != 200 || h.Framing != Length {
			b.Fatalf("status %d framing %d", h.Status, h.Framing)
		}
		if _, err := br.Discard(int(h.Length)); err != nil {
			b.Fatal(err)
		}
	}
}

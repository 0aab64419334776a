package gateway

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"strconv"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// BenchmarkForwardJSON measures the whole forwarding path on loopback: a
// 2026-07-28 tools/call with a bearer token through the gateway (h1 server
// and client) to a backend answering canned JSON. The client and the
// backend are raw sockets that allocate nothing per request, so that
// allocs/op is the gateway's own. Compare with BenchmarkDirectJSON for the
// gateway's own time.
func BenchmarkForwardJSON(b *testing.B) {
	front := newFront(rawGateway(b))
	defer front.Close()
	benchRawPost(b, front.URL[len("http://"):])
}

// rawGateway is a gateway with defaults in front of one rawBackend,
// closed when the test or benchmark ends.
func rawGateway(b testing.TB) *Gateway {
	fl, err := upstream.New([]upstream.Spec{{Name: "canned", URL: "http://" + rawBackend(b) + "/mcp"}})
	if err != nil {
		b.Fatal(err)
	}
	gw, err := New(fl, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(gw.Close)
	return gw
}

// BenchmarkDirectJSON is the same request sent straight to the backend.
func BenchmarkDirectJSON(b *testing.B) {
	benchRawPost(b, rawBackend(b))
}

// rawRequest is the request the forwarding benchmarks send, as bytes: the
// one bench/compare.sh's load generator sends, with a fixed id.
var rawRequest = []byte("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
	"Accept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2026-07-28\r\n" +
	"Mcp-Method: tools/call\r\nMcp-Name: echo\r\nAuthorization: Bearer tok-1\r\n" +
	"Content-Length: " + strconv.Itoa(len(benchBody)) + "\r\n\r\n" + string(benchBody))

// rawAnswer is the backend's answer to every request.
var rawAnswer = []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
	strconv.Itoa(len(cannedAnswer)) + "\r\n\r\n" + string(cannedAnswer))

// rawBackend serves rawAnswer to every request on a loopback listener,
// reading each request's head line by line and its Content-Length body,
// without allocating per request. It returns the listener's address.
func rawBackend(b testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serveRaw(c) // ends when its client (the gateway's pool) closes
		}
	}()
	return ln.Addr().String()
}

func serveRaw(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		n := 0
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				return
			}
			if len(line) <= 2 {
				break
			}
			if len(line) > len(contentLength) && bytes.EqualFold(line[:len(contentLength)], contentLength) {
				n = atoiTrim(line[len(contentLength):])
			}
		}
		if _, err := br.Discard(n); err != nil {
			return
		}
		if _, err := c.Write(rawAnswer); err != nil {
			return
		}
	}
}

// benchRawPost sends rawRequest from parallel kept-alive connections, one
// after another on each, and reads each answer's head line by line and
// its Content-Length body, without allocating per request.
func benchRawPost(b *testing.B, addr string) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Error(err)
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		for pb.Next() {
			if _, err := c.Write(rawRequest); err != nil {
				b.Error(err)
				return
			}
			if err := readRawAnswer(br); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

var (
	status200     = []byte("HTTP/1.1 200 ")
	contentLength = []byte("content-length:")
)

// readRawAnswer reads one answer: a 200 status line, header lines up to
// the blank one, then the Content-Length body.
func readRawAnswer(br *bufio.Reader) error {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(line, status200) {
		return fmt.Errorf("answer %q", line)
	}
	n := -1
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(line) <= 2 {
			break
		}
		if len(line) > len(contentLength) && bytes.EqualFold(line[:len(contentLength)], contentLength) {
			n = atoiTrim(line[len(contentLength):])
		}
	}
	if n < 0 {
		return fmt.Errorf("answer without a Content-Length")
	}
	_, err = br.Discard(n)
	return err
}

// atoiTrim reads the decimal number in b, around its spaces and CRLF.
func atoiTrim(b []byte) int {
	n := 0
	for _, c := range b {
		if c >= '0' && c <= '9' {
			n = n*10 + int(c-'0')
		}
	}
	return n
}

package h1

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

var headSeeds = []string{
	"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
	"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
	"HTTP/1.1 202 Accepted\r\nMcp-Session-Id: 1868a90c\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 204 No Content\r\nDate: Mon, 01 Dec 2025 02:16:00 GMT\r\n\r\n",
	"HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\nContent-Length: 10\r\n\r\n",
	"HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nhello",
	"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 5\r\n\r\nhello",
	"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil close",
	"HTTP/1.1 404 Not Found\r\ncontent-length: 9\r\nconnection: keep-alive, close\r\n\r\nnot found",
	"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\nHTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
	"HTTP/1.1 200 OK\nContent-Length: 0\n\n",
	"HTTP/1.1 200 OK\r\nX-Folded: a\r\n b\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nPragma: no-cache\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200\r\nContent-Length: 007\r\n\r\n",
	"HTTP/1.1 599 \r\nX-Empty:\r\nContent-Length: 0\r\n\r\n",
}

// netHTTPFinal reads a response with net/http the way ReadHead reads one:
// skipping interim answers other than 101.
func netHTTPFinal(data []byte) (*http.Response, error) {
	br := bufio.NewReader(bytes.NewReader(data))
	for range maxInterim + 1 {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			return resp, nil
		}
	}
	return nil, errors.New("too many interim answers")
}

// FuzzReadHead compares ReadHead with net/http.ReadResponse. What ReadHead
// accepts, net/http must accept too, and the two must agree on its status,
// on its length when it has one, and on its fields. ReadHead refuses some
// of what net/http accepts (HTTP/1.2, obsolete folding, spaces in field
// names, 101 and 0xx codes, Transfer-Encoding in HTTP/1.0): those inputs
// are only checked for panics.
func FuzzReadHead(f *testing.F) {
	for _, s := range headSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := ReadHead(bufio.NewReader(bytes.NewReader(data)))
		if err != nil {
			if h != nil {
				t.Fatalf("ReadHead returned a head with error %v", err)
			}
			return
		}
		if h.Status < 200 || h.Status > 999 {
			t.Fatalf("final status %d", h.Status)
		}
		if h.Framing == Length && h.Length < 0 {
			t.Fatalf("negative length %d", h.Length)
		}
		if h.Framing == UntilClose && !h.Close {
			t.Fatalf("body to the close without Close")
		}
		if h.Framing != Length && h.Length != 0 {
			t.Fatalf("framing %d with length %d", h.Framing, h.Length)
		}
		for k, vv := range h.Header {
			if k != http.CanonicalHeaderKey(k) || !validName([]byte(k)) {
				t.Fatalf("field name %q not canonical or not a token", k)
			}
			for _, v := range vv {
				if !ValidValue(v) || v != strings.Trim(v, " \t") {
					t.Fatalf("field value %q kept control characters or OWS", v)
				}
			}
		}

		resp, nerr := netHTTPFinal(data)
		if nerr != nil {
			t.Fatalf("ReadHead accepts status %d, framing %d; net/http refuses it: %v", h.Status, h.Framing, nerr)
		}
		if resp.StatusCode == http.StatusSwitchingProtocols {
			t.Fatalf("net/http reads a 101 answer that ReadHead accepted as %d", h.Status)
		}
		if resp.StatusCode != h.Status {
			t.Fatalf("status %d, net/http %d", h.Status, resp.StatusCode)
		}
		if resp.Close && !h.Close {
			t.Fatalf("net/http closes after this response; ReadHead would keep the connection")
		}
		switch h.Framing {
		case Length:
			if resp.ContentLength != h.Length {
				t.Fatalf("length %d, net/http %d", h.Length, resp.ContentLength)
			}
		case NoBody:
			if resp.ContentLength != 0 {
				t.Fatalf("no body, net/http length %d", resp.ContentLength)
			}
		case Chunked:
			if resp.ContentLength != -1 || !reflect.DeepEqual(resp.TransferEncoding, []string{"chunked"}) {
				t.Fatalf("chunked, net/http length %d, codings %q", resp.ContentLength, resp.TransferEncoding)
			}
		case UntilClose:
			if resp.ContentLength != -1 || resp.TransferEncoding != nil {
				t.Fatalf("body to the close, net/http length %d", resp.ContentLength)
			}
		}
		// net/http deletes or rewrites these after reading them.
		skip := map[string]bool{"Transfer-Encoding": true, "Content-Length": true, "Connection": true, "Cache-Control": true}
		for k, vv := range h.Header {
			if !skip[k] && !reflect.DeepEqual(vv, resp.Header[k]) {
				t.Fatalf("field %s = %q, net/http %q", k, vv, resp.Header[k])
			}
		}
		for k := range resp.Header {
			if _, ok := h.Header[k]; !ok && !skip[k] {
				t.Fatalf("net/http has field %s = %q, ReadHead has not", k, resp.Header[k])
			}
		}
	})
}

var chunkedSeeds = []string{
	"5\r\nhello\r\n0\r\n\r\n",
	"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
	"0\r\n\r\n",
	"a;ext=1\r\n0123456789\r\n0\r\nX-Trailer: v\r\n\r\n",
	"1F\r\n" + strings.Repeat("x", 31) + "\r\n0\r\n\r\n",
	"5 ;x\r\nhello\r\n0\r\n\r\n",
	"5;x \r\nhello\r\n0\r\n\r\n",
	"5\nhello\n0\n\n",
	"5\r\nhello\n0\r\n\r\n",
	"5;a\rb\r\nhello\r\n0\r\n\r\n",
	"5\r\nhelloX\r\n0\r\n\r\n",
	"5\r\nhel",
	"00000000000000a\r\n0123456789\r\n0\r\n\r\n",
	"000000000000000a\r\n0123456789\r\n0\r\n\r\n",
	"10000000000000000\r\n",
	"4\r\n\r\n\r\n\r\n0\r\n\r\nHTTP/1.1 200 OK\r\n",
	"0\r\nX-A: 1\r\n 2\r\n\r\n",
	"0\r\nX-A : 1\r\n\r\n",
	"0\r\nX-A: 1\nX-B: 2\r\n\r\n",
	"0\r\nX-A: 1\r\r\n\r\n",
	"0\r\nno colon\r\n\r\n",
	"0\r\n\nPOST /x HTTP/1.1\r\n\r\n",
	strings.Repeat("1;"+strings.Repeat("e", 100)+"\r\nx\r\n", 200) + "0\r\n\r\n",
}

// chunkedPrefix is the head of the request whose body net/http reads in
// the chunked tests.
const chunkedPrefix = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"

// h1Chunked reads data as a chunked body with chunkedReader and returns
// the body (what was read before an error, with one), how many bytes of
// data it took, and the error (nil at the end of the body).
func h1Chunked(data []byte, bufSize int) ([]byte, int, error) {
	src := bytes.NewReader(data)
	br := bufio.NewReaderSize(src, bufSize)
	body, err := io.ReadAll(&chunkedReader{br: br})
	return body, len(data) - src.Len() - br.Buffered(), err
}

// netHTTPChunked reads data as a chunked request body the way net/http's
// server does: http.ReadRequest over a 4 KiB bufio.Reader, the body read to
// its end, trailers included. It returns the same as h1Chunked.
func netHTTPChunked(data []byte) ([]byte, int, error) {
	src := bytes.NewReader(append([]byte(chunkedPrefix), data...))
	br := bufio.NewReader(src)
	req, err := http.ReadRequest(br)
	if err != nil {
		return nil, 0, err
	}
	body, err := io.ReadAll(req.Body)
	return body, int(src.Size()) - src.Len() - br.Buffered() - len(chunkedPrefix), err
}

// FuzzChunked compares chunkedReader with net/http's reading of a chunked
// request body (net/http/internal/chunked.go, then the trailers with
// net/textproto). What chunkedReader accepts, net/http must accept too,
// with the same body, ending at the same byte: a body that reads one way
// here and another way there is a smuggled request.
//
// The other way round one difference is allowed: chunkedReader holds
// trailer fields to the header rules, and net/http's textproto reader lets
// through lines those refuse (obsolete folding, a space before the colon,
// a bare LF line end when a CRLF CRLF follows). Such an input must fail
// with errBadTrailer, after the same body; any other refusal of what
// net/http accepts fails the fuzzer.
func FuzzChunked(f *testing.F) {
	for _, s := range chunkedSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, n, err := h1Chunked(data, 4096)
		if err == nil {
			// The body ended at a line's end, and the reader sits right
			// after it.
			if !bytes.HasSuffix(data[:n], []byte("\r\n")) {
				t.Fatalf("body ended at %q, not after a CRLF", data[:n])
			}
			if len(got) > n {
				t.Fatalf("%d body bytes from %d bytes", len(got), n)
			}
		}

		// The same bytes read a byte at a time, from a reader giving a byte
		// at a time, give the same body and the same kind of end.
		br1 := bufio.NewReader(iotest.OneByteReader(bytes.NewReader(data)))
		got1, err1 := io.ReadAll(iotest.OneByteReader(&chunkedReader{br: br1}))
		if !bytes.Equal(got, got1) || (err == nil) != (err1 == nil) || errors.Is(err, ErrMalformed) != errors.Is(err1, ErrMalformed) {
			t.Fatalf("one byte at a time: %q, %v; at once: %q, %v", got1, err1, got, err)
		}
		// Nor does the size of the buffer matter (the client's is 2 KiB).
		got2, n2, err2 := h1Chunked(data, 16)
		if !bytes.Equal(got, got2) || n != n2 && err == nil || (err == nil) != (err2 == nil) {
			t.Fatalf("16-byte buffer: %q, %d, %v; 4 KiB: %q, %d, %v", got2, n2, err2, got, n, err)
		}

		want, nn, nerr := netHTTPChunked(data)
		switch {
		case err == nil && nerr != nil:
			t.Fatalf("chunkedReader reads %q from %q; net/http refuses it: %v", got, data[:n], nerr)
		case err == nil:
			if !bytes.Equal(got, want) || n != nn {
				t.Fatalf("body %q from %d bytes; net/http %q from %d", got, n, want, nn)
			}
		case nerr == nil:
			if !errors.Is(err, errBadTrailer) || !bytes.Equal(got, want) {
				t.Fatalf("chunkedReader refuses (%v) what net/http reads as %q from %d bytes", err, want, nn)
			}
		}
	})
}

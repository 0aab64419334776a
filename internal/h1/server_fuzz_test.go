package h1

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"testing"
)

var rqSeeds = []string{
	"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n" +
		"Mcp-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: 3f2a\r\nContent-Length: 58\r\n\r\n" +
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`,
	"GET /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\nLast-Event-ID: 42\r\nCache-Control: no-cache\r\n\r\n",
	"DELETE /mcp HTTP/1.1\r\nHost: gw.example:443\r\nMcp-Session-Id: abc\r\nUser-Agent: curl/8.5.0\r\n\r\n",
	"POST /mcp HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
	"POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nhello",
	"GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
	"GET / HTTP/1.0\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
	"HEAD /x?y=1 HTTP/1.1\r\nHOST: a\r\nX-Forwarded-For: 10.0.0.1, 10.0.0.2\r\n\r\n",
	"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello",
	"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\nhello",
	"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\nabc",
	"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nX-Folded: a\r\n b\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
	"GET http://example.com/x HTTP/1.1\r\nHost: other\r\n\r\n",
	"GET //example.com/x HTTP/1.1\r\nHost: a\r\n\r\n",
	"\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET / HTTP/1.1\nHost: a\n\n",
	"GET / HTTP/2.0\r\nHost: a\r\n\r\n",
	"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
	"GET / HTTP/1.0\r\nConnection: close\r\nConnection: keep-alive\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 007\r\n\r\n",
	// Targets the gateway refuses (gateway/path.go), which both readers
	// must hand on as written, and fields it never passes on.
	"GET /.well-known/oauth-protected-resource/../../admin HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /oauth/%2e%2E/mcp?x=1 HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /oauth%2f..%5c..\\admin HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST /mcp HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: 6.6.6.6\r\nForwarded: for=\"[2001:db8::1]\";proto=https\r\n" +
		"X-Real-IP: 6.6.6.6\r\nX-Forwarded-Prefix: /admin\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\nContent-Length: 0\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: \xc3\xa9\r\nX-A:\t v \t\r\n\r\n",
	"PUT /x HTTP/1.1\r\nHost: \t example.com:443 \t\r\nContent-Length:  3 \r\nConnection: Keep-Alive \r\n\r\nabc",
	"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 05\r\n\r\nhello",
	"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTrailer: Content-Length\r\n\r\n0\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\tchunked\r\n\r\n0\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\nhello",
	"GET foo HTTP/1.1\r\nHost: a\r\n\r\n",
	"CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\r\r\n\r\n",
	"GET /\x00 HTTP/1.1\r\nHost: a\r\n\r\n",
}

// FuzzReadRequestHead checks ReadRequestHead against itself (the buffer
// size must not matter) and against net/http.ReadRequest. It never
// panics; it fails only with a *RequestError or io.EOF on a reader that
// holds the whole input; what the Server accepts (a head ReadRequestHead
// takes, with a target url.ParseRequestURI takes, as serveOne checks),
// net/http must accept too; and where both accept a head, they agree on
// the method, version, Host, framing, where the head ends and, with one
// exclusion, whether the client asked to close.
//
// ReadRequestHead refuses much that net/http accepts (obsolete folding,
// Transfer-Encoding with Content-Length or in HTTP/1.0, missing Host,
// other versions, odd Expect values, field names with spaces, a CR before
// a line's CRLF); those inputs are only checked for panics. Excluded from
// the comparison of heads both accept:
//
//   - absolute-form targets ("GET http://a/ HTTP/1.1"): net/http takes the
//     Host from the target, as RFC 9112 section 3.2.2 says an origin server
//     must; ReadRequestHead reports the Host field, and the Server puts the
//     target's authority in Request.Host (TestServerFixedAbsoluteFormHost).
func FuzzReadRequestHead(f *testing.F) {
	for _, s := range rqSeeds {
		f.Add([]byte(s))
	}
	const maxBytes = 8 << 10
	f.Fuzz(func(t *testing.T, data []byte) {
		src := bytes.NewReader(data)
		br := bufio.NewReaderSize(src, readBufSize)
		head, err := ReadRequestHead(br, maxBytes)
		if err != nil {
			if head != nil {
				t.Fatalf("head %+v returned with error %v", head, err)
			}
			if rqStatus(err) == 0 && err != io.EOF {
				t.Fatalf("error %v (%T) is neither a *RequestError nor io.EOF", err, err)
			}
		}
		consumed := len(data) - br.Buffered() - src.Len()

		// The same bytes through the smallest buffer give the same answer
		// (a line cut short by the end of the input may end as 431 on one
		// and io.EOF on the other: both refuse it).
		small := bufio.NewReaderSize(bytes.NewReader(data), 16)
		head2, err2 := ReadRequestHead(small, maxBytes)
		switch {
		case (err == nil) != (err2 == nil):
			t.Fatalf("4 KiB buffer: %+v, %v; 16-byte buffer: %+v, %v", head, err, head2, err2)
		case err == nil:
			if !reflect.DeepEqual(head, head2) {
				t.Fatalf("4 KiB buffer: %+v; 16-byte buffer: %+v", head, head2)
			}
		case rqStatus(err) != 0 && rqStatus(err2) != 0 && rqStatus(err) != rqStatus(err2):
			t.Fatalf("4 KiB buffer: %v; 16-byte buffer: %v", err, err2)
		}
		if err != nil {
			return
		}

		if _, uerr := url.ParseRequestURI(head.Target); uerr != nil {
			return // the Server answers 400
		}

		nsrc := bytes.NewReader(data)
		nbr := bufio.NewReader(nsrc)
		req, nerr := http.ReadRequest(nbr)
		if nerr != nil {
			t.Fatalf("ReadRequestHead accepts %+v; net/http refuses it: %v", head, nerr)
		}
		if req.URL.Host != "" {
			return // absolute-form; see above
		}
		if req.Method != head.Method {
			t.Errorf("method %q, net/http %q", head.Method, req.Method)
		}
		if req.ProtoMajor != 1 || req.ProtoMinor != head.Minor {
			t.Errorf("HTTP/1.%d, net/http HTTP/%d.%d", head.Minor, req.ProtoMajor, req.ProtoMinor)
		}
		if req.RequestURI != head.Target {
			t.Errorf("target %q, net/http %q", head.Target, req.RequestURI)
		}
		if req.Host != head.Host {
			t.Errorf("Host %q, net/http %q", head.Host, req.Host)
		}
		if head.Chunked {
			if req.ContentLength != -1 || len(req.TransferEncoding) != 1 || req.TransferEncoding[0] != "chunked" {
				t.Errorf("chunked, net/http ContentLength %d TransferEncoding %q", req.ContentLength, req.TransferEncoding)
			}
		} else if req.ContentLength != head.Length || len(req.TransferEncoding) != 0 {
			t.Errorf("Length %d, net/http ContentLength %d TransferEncoding %q", head.Length, req.ContentLength, req.TransferEncoding)
		}
		if req.Close != head.Close {
			t.Errorf("Close %v, net/http %v", head.Close, req.Close)
		}
		// Both must leave the reader at the first byte of the body.
		if nconsumed := len(data) - nbr.Buffered() - nsrc.Len(); nconsumed != consumed {
			t.Errorf("head is %d bytes, net/http read %d", consumed, nconsumed)
		}
		if t.Failed() {
			t.Logf("input %q", data)
		}
	})
}

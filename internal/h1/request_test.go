package h1

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// rqRead parses s with ReadRequestHead through a bufio.Reader of bufSize
// bytes (the server's readBufSize when 0), under maxBytes (64 KiB when 0).
func rqRead(s string, maxBytes, bufSize int) (*RequestHead, *bufio.Reader, error) {
	if bufSize == 0 {
		bufSize = readBufSize
	}
	if maxBytes == 0 {
		maxBytes = 64 << 10
	}
	br := bufio.NewReaderSize(strings.NewReader(s), bufSize)
	h, err := ReadRequestHead(br, maxBytes)
	return h, br, err
}

// rqStatus returns the status of a *RequestError, or 0 if err is not one.
func rqStatus(err error) int {
	var re *RequestError
	if errors.As(err, &re) {
		return re.Status
	}
	return 0
}

type rqCase struct {
	name     string
	in       string
	maxBytes int
	bufSize  int
	want     *RequestHead // when status is 0
	status   int          // the *RequestError's status, 0 for success
	rest     string       // what must remain unread after a successful head
}

func rqRun(t *testing.T, cases []rqCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, br, err := rqRead(tc.in, tc.maxBytes, tc.bufSize)
			if tc.status != 0 {
				if got := rqStatus(err); got != tc.status {
					t.Fatalf("ReadRequestHead = %+v, %v; want a *RequestError with status %d", h, err, tc.status)
				}
				if h != nil {
					t.Errorf("head %+v returned along with error %v", h, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ReadRequestHead: %v", err)
			}
			if diff := cmp.Diff(tc.want, h); diff != "" {
				t.Errorf("head mismatch (-want +got):\n%s", diff)
			}
			rest, _ := io.ReadAll(br)
			if string(rest) != tc.rest {
				t.Errorf("left unread %q, want %q", rest, tc.rest)
			}
			// What ReadRequestHead accepts, net/http accepts (FuzzReadRequestHead).
			if _, err := http.ReadRequest(bufio.NewReader(strings.NewReader(tc.in))); err != nil {
				t.Errorf("net/http refuses it: %v", err)
			}
		})
	}
}

func TestReadRequestHeadValid(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("A", 10<<10)
	rqRun(t, []rqCase{
		{
			name: "POST with body",
			in: "POST /mcp HTTP/1.1\r\nHost: example.com\r\nContent-Type: application/json\r\n" +
				"Accept: application/json, text/event-stream\r\nContent-Length: 13\r\n\r\n{\"jsonrpc\":1}",
			want: &RequestHead{
				Method: "POST", Target: "/mcp", Minor: 1, Host: "example.com", Length: 13,
				Header: http.Header{
					"Content-Type":   {"application/json"},
					"Accept":         {"application/json, text/event-stream"},
					"Content-Length": {"13"},
				},
			},
			rest: "{\"jsonrpc\":1}",
		},
		{
			name: "GET",
			in:   "GET /sse?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nAccept: text/event-stream\r\nLast-Event-ID: 7\r\n\r\n",
			want: &RequestHead{
				Method: "GET", Target: "/sse?x=1", Minor: 1, Host: "127.0.0.1:8080",
				Header: http.Header{"Accept": {"text/event-stream"}, "Last-Event-Id": {"7"}},
			},
		},
		{
			name: "host field removed from header, any case",
			in:   "DELETE /mcp HTTP/1.1\r\nhOsT:   h.example  \r\nMcp-Session-Id: s1\r\n\r\n",
			want: &RequestHead{
				Method: "DELETE", Target: "/mcp", Minor: 1, Host: "h.example",
				Header: http.Header{"Mcp-Session-Id": {"s1"}},
			},
		},
		{
			name: "empty Host is a Host",
			in:   "GET / HTTP/1.1\r\nHost:\r\n\r\n",
			want: &RequestHead{Method: "GET", Target: "/", Minor: 1, Header: http.Header{}},
		},
		{
			name: "HTTP/1.0 closes by default, Host optional",
			in:   "GET / HTTP/1.0\r\n\r\n",
			want: &RequestHead{Method: "GET", Target: "/", Minor: 0, Header: http.Header{}, Close: true},
		},
		{
			name: "HTTP/1.0 keep-alive",
			in:   "GET / HTTP/1.0\r\nHost: a\r\nConnection: Keep-Alive\r\n\r\n",
			want: &RequestHead{Method: "GET", Target: "/", Minor: 0, Host: "a", Header: http.Header{"Connection": {"Keep-Alive"}}},
		},
		{
			name: "HTTP/1.0 with body",
			in:   "POST / HTTP/1.0\r\nContent-Length: 2\r\n\r\nab",
			want: &RequestHead{Method: "POST", Target: "/", Minor: 0, Header: http.Header{"Content-Length": {"2"}}, Length: 2, Close: true},
			rest: "ab",
		},
		{
			name: "HTTP/1.1 Connection close",
			in:   "GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, CLOSE\r\n\r\n",
			want: &RequestHead{Method: "GET", Target: "/", Minor: 1, Host: "a", Header: http.Header{"Connection": {"keep-alive, CLOSE"}}, Close: true},
		},
		{
			name: "HTTP/1.1 keep-alive token does not close",
			in:   "GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive\r\n\r\n",
			want: &RequestHead{Method: "GET", Target: "/", Minor: 1, Host: "a", Header: http.Header{"Connection": {"keep-alive"}}},
		},
		{
			name: "chunked",
			in:   "POST /mcp HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
			want: &RequestHead{
				Method: "POST", Target: "/mcp", Minor: 1, Host: "a", Chunked: true,
				Header: http.Header{"Transfer-Encoding": {"chunked"}},
			},
			rest: "5\r\nhello\r\n0\r\n\r\n",
		},
		{
			name: "chunked any case",
			in:   "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: ChUnKeD \r\n\r\n",
			want: &RequestHead{
				Method: "POST", Target: "/", Minor: 1, Host: "a", Chunked: true,
				Header: http.Header{"Transfer-Encoding": {"ChUnKeD"}},
			},
		},
		{
			name: "repeated equal Content-Length fields",
			in:   "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length:  5\t\r\n\r\nhello",
			want: &RequestHead{Method: "POST", Target: "/", Minor: 1, Host: "a", Header: http.Header{"Content-Length": {"5", "5"}}, Length: 5},
			rest: "hello",
		},
		{
			name: "chunked with a Trailer field",
			in:   "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n",
			want: &RequestHead{
				Method: "POST", Target: "/", Minor: 1, Host: "a", Chunked: true,
				Header: http.Header{"Transfer-Encoding": {"chunked"}, "Trailer": {"X-Sum"}},
			},
		},
		{
			name: "Content-Length zero",
			in:   "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n",
			want: &RequestHead{Method: "POST", Target: "/", Minor: 1, Host: "a", Header: http.Header{"Content-Length": {"0"}}},
		},
		{
			name: "Expect 100-continue",
			in:   "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nExpect: 100-Continue\r\n\r\n",
			want: &RequestHead{
				Method: "POST", Target: "/", Minor: 1, Host: "a", Length: 1, Continue: true,
				Header: http.Header{"Content-Length": {"1"}, "Expect": {"100-Continue"}},
			},
		},
		{
			name: "Expect 100-continue ignored in HTTP/1.0",
			in:   "POST / HTTP/1.0\r\nContent-Length: 1\r\nExpect: 100-continue\r\n\r\n",
			want: &RequestHead{
				Method: "POST", Target: "/", Minor: 0, Length: 1, Close: true,
				Header: http.Header{"Content-Length": {"1"}, "Expect": {"100-continue"}},
			},
		},
		{
			name: "bare LF line ends",
			in:   "GET / HTTP/1.1\nHost: a\nX-A: 1\n\nnext",
			want: &RequestHead{Method: "GET", Target: "/", Minor: 1, Host: "a", Header: http.Header{"X-A": {"1"}}},
			rest: "next",
		},
		{
			name: "repeated fields keep order, OWS trimmed",
			in:   "GET / HTTP/1.1\r\nHost: a\r\nX-M: one \r\nx-m:\ttwo\t\r\nX-Empty:\r\nX-Obs: caf\xc3\xa9\r\n\r\n",
			want: &RequestHead{
				Method: "GET", Target: "/", Minor: 1, Host: "a",
				Header: http.Header{"X-M": {"one", "two"}, "X-Empty": {""}, "X-Obs": {"caf\xc3\xa9"}},
			},
		},
		{
			name: "other method and asterisk target",
			in:   "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n",
			want: &RequestHead{Method: "OPTIONS", Target: "*", Minor: 1, Host: "a", Header: http.Header{}},
		},
		{
			name:    "10 KiB field line through a 4 KiB buffer",
			in:      "POST /mcp HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer " + long + "\r\nContent-Length: 0\r\n\r\n",
			bufSize: readBufSize,
			want: &RequestHead{
				Method: "POST", Target: "/mcp", Minor: 1, Host: "a",
				Header: http.Header{"Authorization": {"Bearer " + long}, "Content-Length": {"0"}},
			},
		},
		{
			name:    "10 KiB request target through a 4 KiB buffer",
			in:      "GET /" + long + " HTTP/1.1\r\nHost: a\r\n\r\n",
			bufSize: readBufSize,
			want:    &RequestHead{Method: "GET", Target: "/" + long, Minor: 1, Host: "a", Header: http.Header{}},
		},
		{
			name:     "head exactly at maxBytes",
			in:       "GET / HTTP/1.1\r\nHost: a\r\n\r\n",
			maxBytes: len("GET / HTTP/1.1\r\nHost: a\r\n\r\n"),
			want:     &RequestHead{Method: "GET", Target: "/", Minor: 1, Host: "a", Header: http.Header{}},
		},
	})
}

func TestReadRequestHeadRefused(t *testing.T) {
	t.Parallel()
	const (
		bad     = http.StatusBadRequest
		tooBig  = http.StatusRequestHeaderFieldsTooLarge
		notImpl = http.StatusNotImplemented
	)
	var many strings.Builder
	many.WriteString("GET / HTTP/1.1\r\nHost: a\r\n")
	for i := range MaxFields {
		many.WriteString("X-F" + strconv.Itoa(i) + ": v\r\n")
	}
	many.WriteString("\r\n")
	small := "GET / HTTP/1.1\r\nHost: a\r\n\r\n"
	rqRun(t, []rqCase{
		{name: "missing Host", in: "GET / HTTP/1.1\r\nAccept: */*\r\n\r\n", status: bad},
		{name: "two Host fields", in: "GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", status: bad},
		{name: "two Host fields, other case", in: "GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n", status: bad},
		{name: "two Host fields in HTTP/1.0", in: "GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n", status: bad},

		{name: "TE and CL", in: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", status: bad},
		{name: "CL and TE", in: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", status: bad},
		{name: "TE gzip", in: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", status: notImpl},
		{name: "TE gzip, chunked", in: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", status: notImpl},
		{name: "TE chunked, chunked", in: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", status: notImpl},
		{name: "TE twice", in: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", status: notImpl},
		{name: "TE empty", in: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\r\n\r\n", status: notImpl},
		{name: "TE in HTTP/1.0", in: "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", status: bad},
		{name: "TE with a Trailer announcing CL", in: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTrailer: Content-Length\r\n\r\n", status: bad},

		{name: "CL conflicting fields", in: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", status: bad},
		{name: "CL list of equal values", in: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\nhello", status: bad},
		{name: "CL equal numbers spelt differently", in: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 005\r\n\r\nhello", status: bad},
		{name: "CL conflicting list", in: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 6\r\n\r\n", status: bad},
		{name: "CL empty list item", in: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5,,5\r\n\r\n", status: bad},
		{name: "CL negative", in: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", status: bad},
		{name: "CL plus sign", in: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\n", status: bad},
		{name: "CL not a number", in: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: five\r\n\r\n", status: bad},
		{name: "CL hex", in: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x5\r\n\r\n", status: bad},
		{name: "CL empty", in: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n\r\n", status: bad},
		{name: "CL overflow", in: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n", status: bad},

		{name: "Expect other", in: "POST / HTTP/1.1\r\nHost: a\r\nExpect: 200-ok\r\n\r\n", status: http.StatusExpectationFailed},
		{name: "Expect twice", in: "POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nExpect: 100-continue\r\n\r\n", status: http.StatusExpectationFailed},
		{name: "Expect list", in: "POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue, foo\r\n\r\n", status: http.StatusExpectationFailed},

		{name: "HTTP/2.0", in: "GET / HTTP/2.0\r\nHost: a\r\n\r\n", status: http.StatusHTTPVersionNotSupported},
		{name: "HTTP/1.2", in: "GET / HTTP/1.2\r\nHost: a\r\n\r\n", status: http.StatusHTTPVersionNotSupported},
		{name: "HTTP/0.9 style", in: "GET /\r\n\r\n", status: bad},
		{name: "lower-case version", in: "GET / http/1.1\r\nHost: a\r\n\r\n", status: bad},
		{name: "garbage request line", in: "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", status: bad},
		{name: "no spaces", in: "hello\r\n\r\n", status: bad},
		{name: "double space", in: "GET  / HTTP/1.1\r\nHost: a\r\n\r\n", status: bad},
		{name: "empty method", in: " / HTTP/1.1\r\nHost: a\r\n\r\n", status: bad},
		{name: "bad method", in: "G(T / HTTP/1.1\r\nHost: a\r\n\r\n", status: bad},
		{name: "control byte in target", in: "GET /a\x01b HTTP/1.1\r\nHost: a\r\n\r\n", status: bad},
		{name: "DEL in target", in: "GET /a\x7fb HTTP/1.1\r\nHost: a\r\n\r\n", status: bad},
		{name: "tab in target", in: "GET /a\tb HTTP/1.1\r\nHost: a\r\n\r\n", status: bad},
		{name: "leading empty line", in: "\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", status: bad},
		{name: "leading bare LF", in: "\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", status: bad},
		{name: "empty line alone", in: "\r\n", status: bad},
		{name: "two leading empty lines", in: "\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", status: bad},

		{name: "obs-fold space", in: "GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\r\n 2\r\n\r\n", status: bad},
		{name: "obs-fold tab", in: "GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\r\n\t2\r\n\r\n", status: bad},
		{name: "leading space on first field", in: "GET / HTTP/1.1\r\n Host: a\r\n\r\n", status: bad},
		{name: "space before colon", in: "GET / HTTP/1.1\r\nHost : a\r\n\r\n", status: bad},
		{name: "empty field name", in: "GET / HTTP/1.1\r\nHost: a\r\n: v\r\n\r\n", status: bad},
		{name: "no colon", in: "GET / HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n", status: bad},
		{name: "NUL in value", in: "GET / HTTP/1.1\r\nHost: a\r\nX-A: a\x00b\r\n\r\n", status: bad},
		{name: "CR in value", in: "GET / HTTP/1.1\r\nHost: a\r\nX-A: a\rb\r\n\r\n", status: bad},
		{name: "CR in Host", in: "GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n", status: bad},

		{name: "head over maxBytes", in: small, maxBytes: len(small) - 1, status: tooBig},
		{name: "many fields over maxBytes", in: "GET / HTTP/1.1\r\nHost: a\r\n" + strings.Repeat("X-Pad: 0123456789\r\n", 100) + "\r\n", maxBytes: 1024, status: tooBig},
		{name: "long field line over maxBytes", in: "GET / HTTP/1.1\r\nHost: a\r\nX-Long: " + strings.Repeat("b", 20<<10) + "\r\n\r\n", maxBytes: 8 << 10, bufSize: 16, status: tooBig},
		{name: "long request line over maxBytes", in: "GET /" + strings.Repeat("b", 20<<10) + " HTTP/1.1\r\nHost: a\r\n\r\n", maxBytes: 8 << 10, status: tooBig},
		{name: "unterminated line over maxBytes", in: "GET /" + strings.Repeat("b", 20<<10), maxBytes: 8 << 10, status: tooBig},
		{name: "too many fields", in: many.String(), maxBytes: 1 << 20, status: tooBig},
	})
}

// TestReadRequestHeadFieldLimit checks the last field count that passes.
func TestReadRequestHeadFieldLimit(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("GET / HTTP/1.1\r\nHost: a\r\n")
	for i := range MaxFields - 1 { // Host is a field too
		b.WriteString("X-F" + strconv.Itoa(i) + ": v\r\n")
	}
	b.WriteString("\r\n")
	h, _, err := rqRead(b.String(), 1<<20, 0)
	if err != nil {
		t.Fatalf("%d fields: %v", MaxFields, err)
	}
	if len(h.Header) != MaxFields-1 || h.Host != "a" {
		t.Errorf("got %d fields and Host %q", len(h.Header), h.Host)
	}
}

// TestReadRequestHeadConnectionErrors: a head cut short is the
// connection's error, not a request to answer.
func TestReadRequestHeadConnectionErrors(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"",
		"GET / HTT",
		"GET / HTTP/1.1\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\n\r",
		"GET / HTTP/1.1\r\nX-Long: " + strings.Repeat("x", 6<<10),
	} {
		h, _, err := rqRead(in, 0, 0)
		if err == nil || rqStatus(err) != 0 {
			t.Errorf("%.40q: got %+v, %v; want a connection error", in, h, err)
			continue
		}
		if !errors.Is(err, io.EOF) {
			t.Errorf("%.40q: error %v, want io.EOF", in, err)
		}
	}
}

// TestReadRequestHeadConsecutive reads pipelined heads from one reader.
func TestReadRequestHeadConsecutive(t *testing.T) {
	t.Parallel()
	in := "POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nxyz" +
		"GET /b HTTP/1.1\r\nHost: b\r\n\r\n"
	br := bufio.NewReaderSize(strings.NewReader(in), 16)
	h, err := ReadRequestHead(br, 1024)
	if err != nil || h.Target != "/a" || h.Length != 3 {
		t.Fatalf("first: %+v, %v", h, err)
	}
	body := make([]byte, 3)
	if _, err := io.ReadFull(br, body); err != nil || string(body) != "xyz" {
		t.Fatalf("body %q, %v", body, err)
	}
	h, err = ReadRequestHead(br, 1024)
	if err != nil || h.Target != "/b" || h.Host != "b" {
		t.Fatalf("second: %+v, %v", h, err)
	}
	if _, err := ReadRequestHead(br, 1024); err != io.EOF {
		t.Fatalf("third: %v, want io.EOF", err)
	}
}

// TestReadRequestHeadBufferSizes: the result does not depend on how the
// bytes are buffered.
func TestReadRequestHeadBufferSizes(t *testing.T) {
	t.Parallel()
	in := "POST /mcp HTTP/1.1\r\nHost: example.com\r\nAuthorization: Bearer " + strings.Repeat("t", 300) +
		"\r\nContent-Length: 2\r\nMcp-Session-Id: abc\r\n\r\n{}"
	want, _, err := rqRead(in, 0, 4096)
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{16, 17, 64, 100, 333} {
		got, br, err := rqRead(in, 0, size)
		if err != nil {
			t.Fatalf("buffer %d: %v", size, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("buffer %d (-want +got):\n%s", size, diff)
		}
		if rest, _ := io.ReadAll(br); string(rest) != "{}" {
			t.Errorf("buffer %d: rest %q", size, rest)
		}
	}
}

func TestRequestErrorMessage(t *testing.T) {
	t.Parallel()
	_, _, err := rqRead("GET / HTTP/1.1\r\n\r\n", 0, 0)
	var re *RequestError
	if !errors.As(err, &re) {
		t.Fatalf("error %v is not a *RequestError", err)
	}
	if re.Reason == "" || !strings.HasPrefix(err.Error(), "400 ") {
		t.Errorf("Error() = %q, Reason %q", err.Error(), re.Reason)
	}
}

// TestReadRequestHeadFixedHTTP10CloseThenKeepAlive: an HTTP/1.0 request
// with "Connection: close" and, in a later field, "Connection: keep-alive"
// asked to close; "close" must win whatever the order (RFC 9112 section
// 9.6; net/http's shouldClose agrees).
func TestReadRequestHeadFixedHTTP10CloseThenKeepAlive(t *testing.T) {
	h, _, err := rqRead("GET / HTTP/1.0\r\nConnection: close\r\nConnection: keep-alive\r\n\r\n", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !h.Close {
		t.Errorf("Close = false for HTTP/1.0 with Connection: close then Connection: keep-alive")
	}
}

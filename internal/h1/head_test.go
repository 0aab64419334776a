package h1

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// readHead parses s with ReadHead and returns the head and the bytes left
// in the reader after it.
func readHead(t *testing.T, s string, bufSize int) (*Head, string, error) {
	t.Helper()
	br := bufio.NewReaderSize(strings.NewReader(s), bufSize)
	h, err := ReadHead(br)
	rest, rerr := io.ReadAll(br)
	if rerr != nil {
		t.Fatalf("reading the rest: %v", rerr)
	}
	return h, string(rest), err
}

type headCase struct {
	name string
	in   string
	// bad: the parser must refuse the head with an error wrapping ErrMalformed.
	bad     bool
	status  int
	framing Framing
	length  int64
	close   bool
	header  http.Header // when not nil, must equal the parsed header exactly
	rest    string      // bytes left after the head; checked when not ""
}

func runHeadCases(t *testing.T, cases []headCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, rest, err := readHead(t, tc.in, 4096)
			if tc.bad {
				if err == nil {
					t.Fatalf("ReadHead(%q) = %+v, want an error wrapping ErrMalformed", tc.in, h)
				}
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("ReadHead(%q) error = %v, want it to wrap ErrMalformed", tc.in, err)
				}
				if h != nil {
					t.Fatalf("ReadHead(%q) returned a head %+v along with error %v", tc.in, h, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ReadHead(%q): %v", tc.in, err)
			}
			if h.Status != tc.status {
				t.Errorf("Status = %d, want %d", h.Status, tc.status)
			}
			if h.Framing != tc.framing {
				t.Errorf("Framing = %d, want %d", h.Framing, tc.framing)
			}
			if h.Length != tc.length {
				t.Errorf("Length = %d, want %d", h.Length, tc.length)
			}
			if h.Close != tc.close {
				t.Errorf("Close = %v, want %v", h.Close, tc.close)
			}
			if tc.header != nil && !reflect.DeepEqual(h.Header, tc.header) {
				t.Errorf("Header = %q, want %q", h.Header, tc.header)
			}
			if tc.rest != "" && rest != tc.rest {
				t.Errorf("left after the head: %q, want %q", rest, tc.rest)
			}
			// What ReadHead accepts, net/http accepts (FuzzReadHead).
			if _, err := netHTTPFinal([]byte(tc.in)); err != nil {
				t.Errorf("net/http refuses it: %v", err)
			}
		})
	}
}

const cl0 = "Content-Length: 0\r\n"

func TestReadHeadStatusLine(t *testing.T) {
	runHeadCases(t, []headCase{
		{name: "1.1 with reason", in: "HTTP/1.1 200 OK\r\n" + cl0 + "\r\n", status: 200, framing: Length},
		{name: "1.1 long reason", in: "HTTP/1.1 404 Not Found Here\r\n" + cl0 + "\r\n", status: 404, framing: Length},
		{name: "1.1 without reason", in: "HTTP/1.1 200\r\n" + cl0 + "\r\n", status: 200, framing: Length},
		{name: "1.1 empty reason", in: "HTTP/1.1 500 \r\n" + cl0 + "\r\n", status: 500, framing: Length},
		{name: "1.0 closes", in: "HTTP/1.0 200 OK\r\n" + cl0 + "\r\n", status: 200, framing: Length, close: true},
		{name: "1.0 keep-alive still closes", in: "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n" + cl0 + "\r\n", status: 200, framing: Length, close: true},
		{name: "unknown 3-digit status", in: "HTTP/1.1 599 Whatever\r\n" + cl0 + "\r\n", status: 599, framing: Length},
		{name: "status 999", in: "HTTP/1.1 999\r\n" + cl0 + "\r\n", status: 999, framing: Length},
		{name: "reason with tab and obs-text", in: "HTTP/1.1 201 Cr\té\xffé\r\n" + cl0 + "\r\n", status: 201, framing: Length},

		{name: "empty line", in: "\r\n" + cl0 + "\r\n", bad: true},
		{name: "HTTP/1.2", in: "HTTP/1.2 200 OK\r\n" + cl0 + "\r\n", bad: true},
		{name: "HTTP/2.0", in: "HTTP/2.0 200 OK\r\n" + cl0 + "\r\n", bad: true},
		{name: "HTTP/2", in: "HTTP/2 200 OK\r\n" + cl0 + "\r\n", bad: true},
		{name: "HTTP/0.9", in: "HTTP/0.9 200 OK\r\n" + cl0 + "\r\n", bad: true},
		{name: "lower-case protocol", in: "http/1.1 200 OK\r\n" + cl0 + "\r\n", bad: true},
		{name: "no protocol", in: "200 OK\r\n" + cl0 + "\r\n", bad: true},
		{name: "ICY", in: "ICY 200 OK\r\n" + cl0 + "\r\n", bad: true},
		{name: "leading space", in: " HTTP/1.1 200 OK\r\n" + cl0 + "\r\n", bad: true},
		{name: "two spaces", in: "HTTP/1.1  200 OK\r\n" + cl0 + "\r\n", bad: true},
		{name: "tab separator", in: "HTTP/1.1\t200 OK\r\n" + cl0 + "\r\n", bad: true},
		{name: "tab before reason", in: "HTTP/1.1 200\tOK\r\n" + cl0 + "\r\n", bad: true},
		{name: "two-digit status", in: "HTTP/1.1 20 OK\r\n" + cl0 + "\r\n", bad: true},
		{name: "two-digit status at end", in: "HTTP/1.1 20\r\n" + cl0 + "\r\n", bad: true},
		{name: "four-digit status", in: "HTTP/1.1 2000 OK\r\n" + cl0 + "\r\n", bad: true},
		{name: "status glued to reason", in: "HTTP/1.1 200OK\r\n" + cl0 + "\r\n", bad: true},
		{name: "status under 100", in: "HTTP/1.1 099 Low\r\n" + cl0 + "\r\n", bad: true},
		{name: "status 000", in: "HTTP/1.1 000\r\n" + cl0 + "\r\n", bad: true},
		{name: "signed status", in: "HTTP/1.1 +20 OK\r\n" + cl0 + "\r\n", bad: true},
		{name: "negative status", in: "HTTP/1.1 -20 OK\r\n" + cl0 + "\r\n", bad: true},
		{name: "hex status", in: "HTTP/1.1 2a0 OK\r\n" + cl0 + "\r\n", bad: true},
		{name: "missing status", in: "HTTP/1.1\r\n" + cl0 + "\r\n", bad: true},
		{name: "request line", in: "GET / HTTP/1.1\r\n" + cl0 + "\r\n", bad: true},
	})
}

func TestReadHeadFields(t *testing.T) {
	runHeadCases(t, []headCase{
		{
			name:    "canonical keys",
			in:      "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nCONTENT-LENGTH: 2\r\nmcp-session-id: abc\r\nx-custom-thing: v\r\nX-ALL-CAPS: w\r\ncache-control: no-cache\r\nsErVeR: s\r\n\r\nok",
			status:  200,
			framing: Length,
			length:  2,
			header: http.Header{
				"Content-Type":   {"application/json"},
				"Content-Length": {"2"},
				"Mcp-Session-Id": {"abc"},
				"X-Custom-Thing": {"v"},
				"X-All-Caps":     {"w"},
				"Cache-Control":  {"no-cache"},
				"Server":         {"s"},
			},
			rest: "ok",
		},
		{
			name:    "values trimmed of OWS only at the ends",
			in:      "HTTP/1.1 200 OK\r\nX-A:   spaced  value \t\r\nX-B:\tx\ty\r\nX-C:nospace\r\nX-Empty:\r\nX-Blank:   \r\n" + cl0 + "\r\n",
			status:  200,
			framing: Length,
			header: http.Header{
				"X-A":            {"spaced  value"},
				"X-B":            {"x\ty"},
				"X-C":            {"nospace"},
				"X-Empty":        {""},
				"X-Blank":        {""},
				"Content-Length": {"0"},
			},
		},
		{
			name:    "repeated fields keep their order",
			in:      "HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nX-Other: o\r\nset-cookie: b=2\r\nSET-COOKIE: c=3\r\nVary: Accept\r\nvary: Accept-Encoding\r\n" + cl0 + "\r\n",
			status:  200,
			framing: Length,
			header: http.Header{
				"Set-Cookie":     {"a=1", "b=2", "c=3"},
				"X-Other":        {"o"},
				"Vary":           {"Accept", "Accept-Encoding"},
				"Content-Length": {"0"},
			},
		},
		{
			name:    "obs-text and punctuation in values",
			in:      "HTTP/1.1 200 OK\r\nX-Utf8: h\xc3\xa9llo\r\nX-High: \xff\x80\r\nX-Punct: a:b;c=\"d, e\"\r\n" + cl0 + "\r\n",
			status:  200,
			framing: Length,
			header: http.Header{
				"X-Utf8":         {"h\xc3\xa9llo"},
				"X-High":         {"\xff\x80"},
				"X-Punct":        {"a:b;c=\"d, e\""},
				"Content-Length": {"0"},
			},
		},
		{
			name:    "token characters in names",
			in:      "HTTP/1.1 200 OK\r\nx!#$%&'*+-.^_`|~1: v\r\n" + cl0 + "\r\n",
			status:  200,
			framing: Length,
			header: http.Header{
				canonicalName("x!#$%&'*+-.^_`|~1"): {"v"},
				"Content-Length":                   {"0"},
			},
		},
		{
			name:    "bare LF line endings",
			in:      "HTTP/1.1 200 OK\nContent-Type: text/plain\nContent-Length: 2\n\nok",
			status:  200,
			framing: Length,
			length:  2,
			header:  http.Header{"Content-Type": {"text/plain"}, "Content-Length": {"2"}},
			rest:    "ok",
		},
		{
			name:    "mixed line endings",
			in:      "HTTP/1.1 200 OK\nContent-Type: text/plain\r\nContent-Length: 3\n\r\nabc",
			status:  200,
			framing: Length,
			length:  3,
			header:  http.Header{"Content-Type": {"text/plain"}, "Content-Length": {"3"}},
			rest:    "abc",
		},

		{name: "obs-fold with space", in: "HTTP/1.1 200 OK\r\nX-A: one\r\n two\r\n" + cl0 + "\r\n", bad: true},
		{name: "obs-fold with tab", in: "HTTP/1.1 200 OK\r\nX-A: one\r\n\ttwo\r\n" + cl0 + "\r\n", bad: true},
		{name: "first field folded", in: "HTTP/1.1 200 OK\r\n X-A: one\r\n" + cl0 + "\r\n", bad: true},
		{name: "space before colon", in: "HTTP/1.1 200 OK\r\nX-A : v\r\n" + cl0 + "\r\n", bad: true},
		{name: "space in name", in: "HTTP/1.1 200 OK\r\nX A: v\r\n" + cl0 + "\r\n", bad: true},
		{name: "tab in name", in: "HTTP/1.1 200 OK\r\nX\tA: v\r\n" + cl0 + "\r\n", bad: true},
		{name: "NUL in name", in: "HTTP/1.1 200 OK\r\nX\x00A: v\r\n" + cl0 + "\r\n", bad: true},
		{name: "separator in name", in: "HTTP/1.1 200 OK\r\nX(A): v\r\n" + cl0 + "\r\n", bad: true},
		{name: "slash in name", in: "HTTP/1.1 200 OK\r\nX/A: v\r\n" + cl0 + "\r\n", bad: true},
		{name: "non-ASCII name", in: "HTTP/1.1 200 OK\r\nX-\xc3\xa9: v\r\n" + cl0 + "\r\n", bad: true},
		{name: "empty name", in: "HTTP/1.1 200 OK\r\n: v\r\n" + cl0 + "\r\n", bad: true},
		{name: "no colon", in: "HTTP/1.1 200 OK\r\nX-A v\r\n" + cl0 + "\r\n", bad: true},
		{name: "NUL in value", in: "HTTP/1.1 200 OK\r\nX-A: a\x00b\r\n" + cl0 + "\r\n", bad: true},
		{name: "CR in value", in: "HTTP/1.1 200 OK\r\nX-A: a\rb\r\n" + cl0 + "\r\n", bad: true},
		{name: "CR ending a value", in: "HTTP/1.1 200 OK\r\nX-A: ab\r\r\n" + cl0 + "\r\n", bad: true},
		{name: "LF splitting a value", in: "HTTP/1.1 200 OK\r\nX-A: a\nb\r\n" + cl0 + "\r\n", bad: true},
		{name: "control char in value", in: "HTTP/1.1 200 OK\r\nX-A: a\x01b\r\n" + cl0 + "\r\n", bad: true},
		{name: "DEL in value", in: "HTTP/1.1 200 OK\r\nX-A: a\x7fb\r\n" + cl0 + "\r\n", bad: true},
		{name: "ESC in value", in: "HTTP/1.1 200 OK\r\nX-A: \x1b[0m\r\n" + cl0 + "\r\n", bad: true},
		{name: "line of CR only", in: "HTTP/1.1 200 OK\r\n\r\r\n" + cl0 + "\r\n", bad: true},
	})
}

// canonicalName is the canonical form net/http gives a field name.
func canonicalName(s string) string { return http.CanonicalHeaderKey(s) }

func TestReadHeadContentLength(t *testing.T) {
	head := func(fields ...string) string {
		return "HTTP/1.1 200 OK\r\n" + strings.Join(fields, "") + "\r\n"
	}
	runHeadCases(t, []headCase{
		{name: "zero", in: head("Content-Length: 0\r\n"), status: 200, framing: Length, length: 0},
		{name: "five", in: head("Content-Length: 5\r\n"), status: 200, framing: Length, length: 5},
		{name: "OWS around", in: head("Content-Length: \t 5 \t\r\n"), status: 200, framing: Length, length: 5},
		{name: "leading zeros", in: head("Content-Length: 007\r\n"), status: 200, framing: Length, length: 7},
		{name: "equal repeated fields", in: head("Content-Length: 5\r\n", "Content-Length: 5\r\n"), status: 200, framing: Length, length: 5},
		{name: "equal repeated fields, OWS", in: head("Content-Length: 5\r\n", "Content-Length:\t5 \r\n"), status: 200, framing: Length, length: 5},
		{name: "18 digits", in: head("Content-Length: 999999999999999999\r\n"), status: 200, framing: Length, length: 999999999999999999},
		{name: "max int64", in: head("Content-Length: 9223372036854775807\r\n"), status: 200, framing: Length, length: 9223372036854775807},
		{name: "leading zeros past 18 digits", in: head("Content-Length: 0000000000000000005\r\n"), status: 200, framing: Length, length: 5},
		{name: "with connection close", in: head("Content-Length: 3\r\n", "Connection: close\r\n"), status: 200, framing: Length, length: 3, close: true},

		// net/http takes one number, spelt the same in every field.
		{name: "list of equal values", in: head("Content-Length: 5, 5\r\n"), bad: true},
		{name: "list without space", in: head("Content-Length: 5,5,5\r\n"), bad: true},
		{name: "equal values spelt differently", in: head("Content-Length: 5\r\n", "content-length: 05\r\n"), bad: true},
		{name: "conflicting list", in: head("Content-Length: 5, 6\r\n"), bad: true},
		{name: "conflicting fields", in: head("Content-Length: 5\r\n", "Content-Length: 6\r\n"), bad: true},
		{name: "conflicting in the second field's list", in: head("Content-Length: 5\r\n", "Content-Length: 5, 7\r\n"), bad: true},
		{name: "negative", in: head("Content-Length: -1\r\n"), bad: true},
		{name: "plus sign", in: head("Content-Length: +5\r\n"), bad: true},
		{name: "hex", in: head("Content-Length: 0x10\r\n"), bad: true},
		{name: "non-digit", in: head("Content-Length: abc\r\n"), bad: true},
		{name: "trailing garbage", in: head("Content-Length: 5a\r\n"), bad: true},
		{name: "inner space", in: head("Content-Length: 1 2\r\n"), bad: true},
		{name: "underscore", in: head("Content-Length: 1_0\r\n"), bad: true},
		{name: "decimal point", in: head("Content-Length: 5.0\r\n"), bad: true},
		{name: "empty", in: head("Content-Length:\r\n"), bad: true},
		{name: "blank", in: head("Content-Length:   \r\n"), bad: true},
		{name: "empty list element", in: head("Content-Length: 5,\r\n"), bad: true},
		{name: "leading comma", in: head("Content-Length: ,5\r\n"), bad: true},
		{name: "empty second field", in: head("Content-Length: 5\r\n", "Content-Length:\r\n"), bad: true},
		{name: "huge", in: head("Content-Length: 99999999999999999999\r\n"), bad: true},
		{name: "overflows int64", in: head("Content-Length: 9223372036854775808\r\n"), bad: true},
	})
}

func TestReadHeadFraming(t *testing.T) {
	head := func(status string, fields ...string) string {
		return "HTTP/1.1 " + status + "\r\n" + strings.Join(fields, "") + "\r\n"
	}
	runHeadCases(t, []headCase{
		{name: "chunked", in: head("200 OK", "Transfer-Encoding: chunked\r\n") + "5\r\n", status: 200, framing: Chunked, rest: "5\r\n"},
		{name: "chunked any case", in: head("200 OK", "transfer-encoding: CHUNKED\r\n"), status: 200, framing: Chunked},
		{name: "chunked, OWS", in: head("200 OK", "Transfer-Encoding: \tchunked \r\n"), status: 200, framing: Chunked},
		{name: "TE with CL closes", in: head("200 OK", "Content-Length: 5\r\n", "Transfer-Encoding: chunked\r\n"), status: 200, framing: Chunked, close: true},
		{name: "CL after TE closes", in: head("200 OK", "Transfer-Encoding: chunked\r\n", "Content-Length: 5\r\n"), status: 200, framing: Chunked, close: true},
		{name: "Trailer announcing other fields", in: head("200 OK", "Transfer-Encoding: chunked\r\n", "Trailer: X-Sum, Server-Timing\r\n"), status: 200, framing: Chunked},
		{name: "Trailer without chunked is ignored", in: head("200 OK", "Trailer: Content-Length\r\n", cl0), status: 200, framing: Length},
		// Like net/http: one Transfer-Encoding field, saying chunked, in
		// HTTP/1.1; anything else could be read another way.
		{name: "chunked last of a list", in: head("200 OK", "Transfer-Encoding: gzip, chunked\r\n"), bad: true},
		{name: "chunked in the last field", in: head("200 OK", "Transfer-Encoding: gzip\r\n", "Transfer-Encoding: chunked\r\n"), bad: true},
		{name: "chunked twice", in: head("200 OK", "Transfer-Encoding: chunked, chunked\r\n"), bad: true},
		{name: "chunked not last", in: head("200 OK", "Transfer-Encoding: chunked, gzip\r\n"), bad: true},
		{name: "other coding", in: head("200 OK", "Transfer-Encoding: gzip\r\n"), bad: true},
		{name: "identity", in: head("200 OK", "Transfer-Encoding: identity\r\n", cl0), bad: true},
		{name: "chunkedx is not chunked", in: head("200 OK", "Transfer-Encoding: chunkedx\r\n"), bad: true},
		{name: "empty TE", in: head("200 OK", "Transfer-Encoding:\r\n", cl0), bad: true},
		{name: "TE over a bad CL", in: head("200 OK", "Transfer-Encoding: chunked\r\n", "Content-Length: 5, 6\r\n"), bad: true},
		{name: "chunked in HTTP/1.0", in: "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", bad: true},
		{name: "Trailer announcing Content-Length", in: head("200 OK", "Transfer-Encoding: chunked\r\n", "Trailer: X-Sum, content-length\r\n"), bad: true},
		{name: "Trailer announcing Transfer-Encoding", in: head("200 OK", "Transfer-Encoding: chunked\r\n", "Trailer: Transfer-Encoding\r\n"), bad: true},
		{name: "Trailer announcing Trailer", in: head("200 OK", "Transfer-Encoding: chunked\r\n", "Trailer: Trailer\r\n"), bad: true},
		{name: "no framing", in: head("200 OK", "Content-Type: text/plain\r\n") + "body", status: 200, framing: UntilClose, close: true, rest: "body"},
		{name: "no fields at all", in: head("200 OK"), status: 200, framing: UntilClose, close: true},
		{name: "no framing in HTTP/1.0", in: "HTTP/1.0 200 OK\r\n\r\n", status: 200, framing: UntilClose, close: true},

		{name: "connection close", in: head("200 OK", "Connection: close\r\n", cl0), status: 200, framing: Length, close: true},
		{name: "connection Close any case", in: head("200 OK", "connection: CLOSE\r\n", cl0), status: 200, framing: Length, close: true},
		{name: "close in a list", in: head("200 OK", "Connection: keep-alive, close\r\n", cl0), status: 200, framing: Length, close: true},
		{name: "close in a list, OWS", in: head("200 OK", "Connection: upgrade,\t close \t\r\n", cl0), status: 200, framing: Length, close: true},
		{name: "close in a second field", in: head("200 OK", "Connection: keep-alive\r\n", "Connection: close\r\n", cl0), status: 200, framing: Length, close: true},
		{name: "keep-alive", in: head("200 OK", "Connection: keep-alive\r\n", cl0), status: 200, framing: Length},
		{name: "closed is not close", in: head("200 OK", "Connection: closed\r\n", cl0), status: 200, framing: Length},
		{name: "close as part of a token", in: head("200 OK", "Connection: x-close\r\n", cl0), status: 200, framing: Length},
		{name: "close in another field", in: head("200 OK", "X-Connection: close\r\n", cl0), status: 200, framing: Length},

		{name: "204", in: head("204 No Content") + "next", status: 204, framing: NoBody, rest: "next"},
		{name: "204 ignores CL", in: head("204 No Content", "Content-Length: 5\r\n") + "next", status: 204, framing: NoBody, rest: "next"},
		{name: "204 ignores TE", in: head("204 No Content", "Transfer-Encoding: chunked\r\n"), status: 204, framing: NoBody},
		// net/http checks framing fields whatever the status.
		{name: "204 with a bad CL", in: head("204 No Content", "Content-Length: x\r\n"), bad: true},
		{name: "204 with another coding", in: head("204 No Content", "Transfer-Encoding: gzip\r\n"), bad: true},
		{name: "100 with a bad CL", in: "HTTP/1.1 100 Continue\r\nContent-Length: 5, 5\r\n\r\n" + head("200 OK", cl0), bad: true},
		{name: "304", in: head("304 Not Modified", "Content-Length: 100\r\n", "ETag: \"x\"\r\n") + "next", status: 304, framing: NoBody, rest: "next"},
		{name: "304 with close", in: head("304 Not Modified", "Connection: close\r\n"), status: 304, framing: NoBody, close: true},
		{name: "205 has a body", in: head("205 Reset Content", "Content-Length: 0\r\n"), status: 205, framing: Length},
		{name: "200 with CL 0", in: head("200 OK", cl0), status: 200, framing: Length},
	})
}

func TestReadHeadInterim(t *testing.T) {
	const final = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok"
	runHeadCases(t, []headCase{
		{
			name:    "100 then 200",
			in:      "HTTP/1.1 100 Continue\r\n\r\n" + final,
			status:  200,
			framing: Length,
			length:  2,
			header:  http.Header{"Content-Type": {"text/plain"}, "Content-Length": {"2"}},
			rest:    "ok",
		},
		{
			name:    "103 fields are not kept",
			in:      "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n" + final,
			status:  200,
			framing: Length,
			length:  2,
			header:  http.Header{"Content-Type": {"text/plain"}, "Content-Length": {"2"}},
			rest:    "ok",
		},
		{
			name:    "interim with bare LF",
			in:      "HTTP/1.1 100 Continue\n\n" + final,
			status:  200,
			framing: Length,
			length:  2,
			rest:    "ok",
		},
		{
			name:    "HTTP/1.0 interim does not close the final",
			in:      "HTTP/1.0 100 Continue\r\n\r\n" + final,
			status:  200,
			framing: Length,
			length:  2,
			rest:    "ok",
		},
		{
			name:    "interim then 204",
			in:      "HTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
			status:  204,
			framing: NoBody,
		},
		{name: "101 refused", in: "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", bad: true},
		{name: "101 after 100 refused", in: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 101 Switching Protocols\r\n\r\n" + final, bad: true},
		{name: "bad final after interim", in: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 20 OK\r\n\r\n", bad: true},
		{name: "bad interim", in: "HTTP/1.1 100 Continue\r\nBad Name: x\r\n\r\n" + final, bad: true},
	})
}

func interims(n int) string {
	return strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", n) + "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
}

func TestReadHeadInterimLimit(t *testing.T) {
	for _, n := range []int{0, 1, 7} {
		if h, _, err := readHead(t, interims(n), 4096); err != nil || h.Status != 200 {
			t.Errorf("%d interim answers: head %+v, error %v; want 200", n, h, err)
		}
	}
	for _, n := range []int{9, 20} {
		if _, _, err := readHead(t, interims(n), 4096); !errors.Is(err, ErrMalformed) {
			t.Errorf("%d interim answers: error %v, want ErrMalformed", n, err)
		}
	}
	// maxInterim is documented as the number of 1xx answers skipped before
	// the final one, so maxInterim interim answers must still be accepted.
	if h, _, err := readHead(t, interims(maxInterim), 4096); err != nil || h.Status != 200 {
		t.Errorf("%d (maxInterim) interim answers: head %+v, error %v; want 200", maxInterim, h, err)
	}
}

// fieldsHead returns a head with n header fields (Content-Length included).
func fieldsHead(n int) string {
	var b strings.Builder
	b.WriteString("HTTP/1.1 200 OK\r\n")
	b.WriteString(cl0)
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "X-F-%d: v\r\n", i)
	}
	b.WriteString("\r\n")
	return b.String()
}

func TestReadHeadMaxFields(t *testing.T) {
	h, _, err := readHead(t, fieldsHead(MaxFields), 4096)
	if err != nil {
		t.Fatalf("%d fields: %v", MaxFields, err)
	}
	if len(h.Header) != MaxFields {
		t.Errorf("%d fields parsed into %d keys", MaxFields, len(h.Header))
	}
	_, _, err = readHead(t, fieldsHead(MaxFields+1), 4096)
	if !errors.Is(err, ErrMalformed) {
		t.Errorf("%d fields: error %v, want ErrMalformed", MaxFields+1, err)
	}
	// Repeated names count as fields too.
	rep := "HTTP/1.1 200 OK\r\n" + strings.Repeat("Set-Cookie: a\r\n", MaxFields+1) + "\r\n"
	if _, _, err := readHead(t, rep, 4096); !errors.Is(err, ErrMalformed) {
		t.Errorf("%d repeated fields: error %v, want ErrMalformed", MaxFields+1, err)
	}
}

// sizedHead returns a head of exactly n bytes, status line and final blank
// line included, with no line over 1 KiB.
func sizedHead(n int) string {
	var b strings.Builder
	b.WriteString("HTTP/1.1 200 OK\r\n")
	b.WriteString(cl0)
	r := n - b.Len() - 2
	for i := 0; r > 0; i++ {
		size := 1000
		if r <= 1013 {
			size = r
		}
		// "X-Fill-NNN: " is 12 bytes, CRLF 2.
		fmt.Fprintf(&b, "X-Fill-%03d: %s\r\n", i, strings.Repeat("v", size-14))
		r -= size
	}
	b.WriteString("\r\n")
	return b.String()
}

func TestReadHeadMaxHeadBytes(t *testing.T) {
	for _, n := range []int{100, MaxHeadBytes - 1, MaxHeadBytes} {
		s := sizedHead(n)
		if len(s) != n {
			t.Fatalf("sizedHead(%d) has %d bytes", n, len(s))
		}
		h, rest, err := readHead(t, s+"body", 4096)
		if err != nil {
			t.Errorf("head of %d bytes: %v", n, err)
			continue
		}
		if h.Framing != Length || rest != "body" {
			t.Errorf("head of %d bytes: framing %d, rest %q", n, h.Framing, rest)
		}
	}
	for _, n := range []int{MaxHeadBytes + 1, MaxHeadBytes + 2000} {
		s := sizedHead(n)
		if len(s) != n {
			t.Fatalf("sizedHead(%d) has %d bytes", n, len(s))
		}
		if _, _, err := readHead(t, s, 4096); !errors.Is(err, ErrMalformed) {
			t.Errorf("head of %d bytes: error %v, want ErrMalformed", n, err)
		}
	}
	// The budget is per answer: interim answers do not use up the final's.
	s := "HTTP/1.1 103 Early Hints\r\n" + strings.Repeat("Link: </"+strings.Repeat("a", 900)+">\r\n", 60) + "\r\n" + sizedHead(MaxHeadBytes)
	if _, _, err := readHead(t, s, 4096); err != nil {
		t.Errorf("large interim then a head of MaxHeadBytes: %v", err)
	}
}

// bigLineHead returns a head of exactly n bytes whose one field fills it.
func bigLineHead(n int) string {
	const pre, post = "HTTP/1.1 200 OK\r\nX-Big: ", "\r\n\r\n"
	return pre + strings.Repeat("b", n-len(pre)-len(post)) + post
}

func TestReadHeadLongLine(t *testing.T) {
	// A field longer than br's buffer (4 KiB, as the pool's) but within
	// MaxHeadBytes is accepted whole.
	for _, size := range []int{4096, 4097, 10 << 10, 40 << 10} {
		long := strings.Repeat("x", size)
		in := "HTTP/1.1 200 OK\r\nX-Long: " + long + "\r\nX-After: a\r\n" + cl0 + "\r\nbody"
		h, rest, err := readHead(t, in, 4096)
		if err != nil {
			t.Errorf("%d-byte field: %v", size, err)
			continue
		}
		if got := h.Header.Get("X-Long"); got != long {
			t.Errorf("%d-byte field: X-Long has %d bytes", size, len(got))
		}
		if h.Header.Get("X-After") != "a" || rest != "body" {
			t.Errorf("%d-byte field: X-After %q, rest %q", size, h.Header.Get("X-After"), rest)
		}
	}
	// A long status line too.
	in := "HTTP/1.1 200 " + strings.Repeat("r", 8000) + "\r\n" + cl0 + "\r\n"
	if h, _, err := readHead(t, in, 4096); err != nil || h.Status != 200 {
		t.Errorf("8 KB reason phrase: %+v, %v", h, err)
	}

	// One line filling the budget exactly, and one byte over it.
	for _, bufSize := range []int{4096, 128 << 10} {
		if h, _, err := readHead(t, bigLineHead(MaxHeadBytes), bufSize); err != nil || len(h.Header.Get("X-Big")) < MaxHeadBytes-64 {
			t.Errorf("buffer %d: head of MaxHeadBytes in one line: %v", bufSize, err)
		}
		if _, _, err := readHead(t, bigLineHead(MaxHeadBytes+1), bufSize); !errors.Is(err, ErrMalformed) {
			t.Errorf("buffer %d: head of MaxHeadBytes+1 in one line: error %v, want ErrMalformed", bufSize, err)
		}
		in := "HTTP/1.1 200 OK\r\nX-Long: " + strings.Repeat("x", 4*MaxHeadBytes) + "\r\n" + cl0 + "\r\n"
		if _, _, err := readHead(t, in, bufSize); !errors.Is(err, ErrMalformed) {
			t.Errorf("buffer %d: line of 4*MaxHeadBytes: error %v, want ErrMalformed", bufSize, err)
		}
	}
	// A long line cut short by the end of input is an EOF, not a head.
	in = "HTTP/1.1 200 OK\r\nX-Long: " + strings.Repeat("x", 10000)
	if _, _, err := readHead(t, in, 4096); !errors.Is(err, io.EOF) {
		t.Errorf("truncated long line: error %v, want io.EOF", err)
	}
}

func TestReadHeadTruncated(t *testing.T) {
	for _, in := range []string{
		"",
		"HTTP/1.1 200 OK",
		"HTTP/1.1 200 OK\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 5",
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r",
		"HTTP/1.1 100 Continue\r\n\r\n",
	} {
		h, _, err := readHead(t, in, 4096)
		if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("ReadHead(%q) = %+v, %v; want an EOF error", in, h, err)
		}
		if errors.Is(err, ErrMalformed) {
			t.Errorf("ReadHead(%q): truncation reported as malformed: %v", in, err)
		}
	}
}

func TestReadHeadHeaderNotAliased(t *testing.T) {
	h, _, err := readHead(t, "HTTP/1.1 200 OK\r\nX-A: a\r\nX-B: b\r\nX-C: c1\r\nX-C: c2\r\nX-D: d\r\n"+cl0+"\r\n", 4096)
	if err != nil {
		t.Fatal(err)
	}
	h.Header["X-A"] = append(h.Header["X-A"], "a2")
	h.Header["X-C"] = append(h.Header["X-C"], "c3")
	want := http.Header{
		"X-A":            {"a", "a2"},
		"X-B":            {"b"},
		"X-C":            {"c1", "c2", "c3"},
		"X-D":            {"d"},
		"Content-Length": {"0"},
	}
	if !reflect.DeepEqual(h.Header, want) {
		t.Errorf("after appending: %q, want %q", h.Header, want)
	}
}

func TestReadHeadConsecutive(t *testing.T) {
	// Two responses back to back on one reader: ReadHead must stop at the
	// blank line and not read ahead into the next one.
	in := "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"
	br := bufio.NewReader(strings.NewReader(in))
	h, err := ReadHead(br)
	if err != nil || h.Status != 200 || h.Length != 2 {
		t.Fatalf("first: %+v, %v", h, err)
	}
	body := make([]byte, 2)
	if _, err := io.ReadFull(br, body); err != nil || string(body) != "ok" {
		t.Fatalf("first body %q, %v", body, err)
	}
	h, err = ReadHead(br)
	if err != nil || h.Status != 404 || h.Length != 0 {
		t.Fatalf("second: %+v, %v", h, err)
	}
	if _, err := ReadHead(br); !errors.Is(err, io.EOF) {
		t.Fatalf("third: %v, want io.EOF", err)
	}
}

func TestValidValue(t *testing.T) {
	for _, tc := range []struct {
		v  string
		ok bool
	}{
		{"", true},
		{"plain", true},
		{"with space\tand tab", true},
		{"h\xc3\xa9 \xff", true},
		{"a\rb", false},
		{"a\nb", false},
		{"a\r\nX-Injected: 1", false},
		{"a\x00", false},
		{"\x01", false},
		{"a\x7f", false},
		{"\x1f", false},
	} {
		if got := ValidValue(tc.v); got != tc.ok {
			t.Errorf("ValidValue(%q) = %v, want %v", tc.v, got, tc.ok)
		}
		if got := validValue([]byte(tc.v)); got != tc.ok {
			t.Errorf("validValue(%q) = %v, want %v", tc.v, got, tc.ok)
		}
	}
}

func BenchmarkReadHead(b *testing.B) {
	const in = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 42\r\nDate: Mon, 01 Dec 2025 02:16:00 GMT\r\nMcp-Session-Id: 0123456789abcdef\r\n\r\n"
	sr := strings.NewReader(in)
	br := bufio.NewReader(sr)
	b.ReportAllocs()
	for b.Loop() {
		sr.Reset(in)
		br.Reset(sr)
		if _, err := ReadHead(br); err != nil {
			b.Fatal(err)
		}
	}
}

package h1

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// RequestError is a request the server refuses before its handler sees it,
// with the status to answer.
type RequestError struct {
	Status int
	Reason string
}

func (e *RequestError) Error() string { return fmt.Sprintf("%d %s", e.Status, e.Reason) }

func badRequest(reason string) error {
	return &RequestError{Status: http.StatusBadRequest, Reason: reason}
}

// RequestHead is a parsed request line and header section.
type RequestHead struct {
	Method string
	Target string // request-target as sent
	Minor  int    // HTTP/1.x
	Header http.Header
	Host   string
	// Framing: Chunked, or Length (Length 0 for a request with neither
	// Content-Length nor Transfer-Encoding, which has no body).
	Chunked bool
	Length  int64
	// Close is true when the client asked to close after this exchange
	// (Connection: close, or HTTP/1.0 without keep-alive).
	Close bool
	// Continue is true for "Expect: 100-continue".
	Continue bool
}

// ReadRequestHead reads one request head from br, at most maxBytes of it.
// It refuses, with a *RequestError, what RFC 9112 says a server must
// refuse and what would let a request be read two ways (request
// smuggling): obsolete line folding, bad field names or values, a
// Transfer-Encoding other than one "chunked", Transfer-Encoding together
// with Content-Length or in HTTP/1.0, Content-Length values that are not
// one decimal number spelt the same way, a Trailer field announcing a
// framing field, an empty line before the request line, a missing or
// repeated Host in HTTP/1.1, and versions other than HTTP/1.0 and 1.1. An
// error that is not a *RequestError is the connection's (EOF, a timeout).
func ReadRequestHead(br *bufio.Reader, maxBytes int) (*RequestHead, error) {
	x := &struct {
		h RequestHead
		f requestFields
	}{}
	room := x.f.room()
	if err := readRequestHeadInto(br, maxBytes, &x.h, &room); err != nil {
		return nil, err
	}
	return &x.h, nil
}

// readRequestHeadInto is ReadRequestHead into h, which the server keeps on its
// stack, with the values in room.
func readRequestHeadInto(br *bufio.Reader, maxBytes int, h *RequestHead, room *fieldRoom) error {
	budget := maxBytes
	// RFC 9112 section 2.2 says a server SHOULD ignore an empty line before
	// a request; net/http does not, and neither does this, so that the two
	// agree on where every request starts.
	line, err := readLine(br, &budget)
	if err != nil {
		return requestErr(err)
	}
	if err := h.parseRequestLine(line); err != nil {
		return err
	}
	if h.Header, err = readFields(br, &budget, room); err != nil {
		return requestErr(err)
	}
	return h.frame()
}

// requestErr turns the field parser's refusals into 400 or 431.
func requestErr(err error) error {
	if !errors.Is(err, ErrMalformed) {
		return err
	}
	if errors.Is(err, errTooLarge) {
		return &RequestError{Status: http.StatusRequestHeaderFieldsTooLarge, Reason: "request header too large"}
	}
	return badRequest(strings.TrimPrefix(err.Error(), ErrMalformed.Error()+": "))
}

func (h *RequestHead) parseRequestLine(line []byte) error {
	sp1 := bytes.IndexByte(line, ' ')
	if sp1 <= 0 {
		return badRequest("malformed request line")
	}
	rest := line[sp1+1:]
	sp2 := bytes.IndexByte(rest, ' ')
	if sp2 <= 0 {
		return badRequest("malformed request line")
	}
	method, target, proto := line[:sp1], rest[:sp2], rest[sp2+1:]
	if !validName(method) {
		return badRequest("bad method")
	}
	if string(method) == http.MethodConnect {
		// Nothing here is a tunnel (RFC 9110 section 9.3.6), and an
		// authority-form target is read differently by other parsers.
		return &RequestError{Status: http.StatusMethodNotAllowed, Reason: "CONNECT not served"}
	}
	for _, c := range target {
		if c <= ' ' || c == 0x7f {
			return badRequest("bad request target")
		}
	}
	switch string(proto) {
	case "HTTP/1.1":
		h.Minor = 1
	case "HTTP/1.0":
		h.Minor = 0
	default:
		if len(proto) == 8 && bytes.HasPrefix(proto, []byte("HTTP/")) && isDigit(proto[5]) && proto[6] == '.' && isDigit(proto[7]) {
			return &RequestError{Status: http.StatusHTTPVersionNotSupported, Reason: "HTTP version not supported"}
		}
		return badRequest("malformed request line")
	}
	h.Method = internMethod(method)
	h.Target = internTarget(target)
	return nil
}

func internMethod(b []byte) string {
	switch string(b) {
	case "POST":
		return "POST"
	case "GET":
		return "GET"
	case "DELETE":
		return "DELETE"
	}
	return string(b)
}

func internTarget(b []byte) string {
	switch string(b) {
	case "/mcp":
		return "/mcp"
	case "/":
		return "/"
	case "/healthz":
		return "/healthz"
	}
	return string(b)
}

func (h *RequestHead) frame() error {
	hosts := h.Header["Host"]
	switch {
	case len(hosts) > 1:
		return badRequest("too many Host fields")
	case len(hosts) == 1:
		if !validHost(hosts[0]) {
			return badRequest("bad Host")
		}
		h.Host = hosts[0]
		delete(h.Header, "Host")
	case h.Minor == 1:
		return badRequest("missing Host")
	}
	var closeTok, keepAlive bool
	for _, v := range h.Header["Connection"] {
		closeTok = closeTok || hasToken(v, "close")
		keepAlive = keepAlive || hasToken(v, "keep-alive")
	}
	// "close" wins whatever the order; HTTP/1.0 closes unless asked not to.
	h.Close = closeTok || (h.Minor == 0 && !keepAlive)
	if exp := h.Header["Expect"]; len(exp) > 0 {
		if len(exp) > 1 || !equalFold(exp[0], "100-continue") {
			return &RequestError{Status: http.StatusExpectationFailed, Reason: "unsupported expectation"}
		}
		h.Continue = h.Minor == 1
	}
	te, cl := h.Header["Transfer-Encoding"], h.Header["Content-Length"]
	if len(te) > 0 {
		if len(cl) > 0 {
			return badRequest("both Transfer-Encoding and Content-Length")
		}
		if h.Minor == 0 {
			return badRequest("Transfer-Encoding in HTTP/1.0")
		}
		if !onlyChunked(te) {
			return &RequestError{Status: http.StatusNotImplemented, Reason: "unsupported transfer encoding"}
		}
		if badTrailerDecl(h.Header["Trailer"]) {
			return badRequest("bad Trailer field")
		}
		h.Chunked = true
		return nil
	}
	if len(cl) > 0 {
		n, err := parseLength(cl)
		if err != nil {
			return badRequest("bad Content-Length")
		}
		h.Length = n
	}
	return nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// validHost reports whether a Host value is a plausible authority: the
// characters of a reg-name, an IPv4 or IPv6 literal and a port (RFC 3986),
// as net/http's server checks.
func validHost(h string) bool {
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		default:
			switch c {
			case '-', '.', '_', '~', '!', '$', '&', '\'', '(', ')', '*', '+', ',', ';', '=', ':', '[', ']', '%':
			default:
				return false
			}
		}
	}
	return true
}

package h1

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
)

// Limits on what a replica may send before its body.
const (
	MaxHeadBytes = 64 << 10 // status line and header fields together
	MaxFields    = 128      // header fields
	maxInterim   = 8        // 1xx answers skipped before the final one
)

// ErrMalformed is wrapped by every error about a response the parser refuses.
var ErrMalformed = errors.New("malformed HTTP/1.1 response")

func malformed(what string) error { return fmt.Errorf("%w: %s", ErrMalformed, what) }

// errTooLarge is a head over its byte or field budget.
var errTooLarge = fmt.Errorf("%w: head too large", ErrMalformed)

// Framing says how a response's body is delimited (RFC 9112 section 6.3).
type Framing uint8

const (
	NoBody     Framing = iota // 1xx, 204, 304
	Length                    // Content-Length
	Chunked                   // Transfer-Encoding ending in chunked
	UntilClose                // neither: the body runs to the end of the connection
)

// Head is a parsed status line and header section.
type Head struct {
	Status  int
	Header  http.Header
	Framing Framing
	Length  int64 // with Framing Length
	// Close is true when the connection cannot carry another request after
	// this response: "Connection: close", HTTP/1.0, a body read to the
	// close, or Transfer-Encoding together with Content-Length.
	Close bool
}

// ReadHead reads one response head from br: the status line and header
// fields, up to the blank line. It skips interim 1xx answers other than
// 101, which it refuses (the gateway never asks to switch protocols).
// Obsolete line folding, bad field names, a bad or conflicting
// Content-Length, a Transfer-Encoding other than one "chunked" (or any in
// HTTP/1.0), a Trailer field announcing a framing field, and heads over
// MaxHeadBytes or MaxFields are refused with an error wrapping
// ErrMalformed: nothing net/http's ReadResponse refuses is accepted.
func ReadHead(br *bufio.Reader) (*Head, error) {
	x := &struct {
		h Head
		f answerFields
	}{}
	room := x.f.room()
	if err := readHeadInto(br, &x.h, &room); err != nil {
		return nil, err
	}
	return &x.h, nil
}

// readHeadInto is ReadHead into h, which the client keeps on its stack,
// with the values in room (the interim answers' before the final one's).
func readHeadInto(br *bufio.Reader, h *Head, room *fieldRoom) error {
	for range maxInterim + 1 {
		if err := readOne(br, h, room); err != nil {
			return err
		}
		if h.Status >= 200 {
			return nil
		}
		if h.Status == http.StatusSwitchingProtocols {
			return malformed("101 switching protocols")
		}
	}
	return malformed("too many interim responses")
}

func readOne(br *bufio.Reader, h *Head, room *fieldRoom) error {
	budget := MaxHeadBytes
	line, err := readLine(br, &budget)
	if err != nil {
		return err
	}
	*h = Head{}
	var minor byte
	if h.Status, minor, err = parseStatusLine(line); err != nil {
		return err
	}
	h.Close = minor == '0'
	if h.Header, err = readFields(br, &budget, room); err != nil {
		return err
	}
	return h.frame(minor)
}

// readFields reads header fields up to the blank line that ends them.
// Values share one backing array, as in net/http, so that each field costs
// its strings and not a slice of its own; that array and the bytes of the
// values that are not common ones are taken from room where it has them.
func readFields(br *bufio.Reader, budget *int, room *fieldRoom) (http.Header, error) {
	// The first fields go in arrays on the stack; a head with more spills
	// to the heap. Small arrays keep the stacks of the goroutines that hold
	// idle streams small.
	// Values that are not common ones and find no room are copied into raw
	// and become one string at the end, which they share: one allocation
	// for all of them.
	var (
		keyArr, valArr [24]string
		keys, vals     = keyArr[:0], valArr[:0]
		spanArr        [24]valueSpan
		spans          = spanArr[:0]
		rawArr         [256]byte
		raw            = rawArr[:0]
		n              int
	)
	for {
		line, err := readLine(br, budget)
		if err != nil {
			return nil, err
		}
		if len(line) == 0 {
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			return nil, malformed("obsolete line folding")
		}
		if n == MaxFields {
			return nil, errTooLarge
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 || !validName(line[:colon]) {
			return nil, malformed("bad header field name")
		}
		v := bytes.Trim(line[colon+1:], " \t")
		if !validValue(v) {
			return nil, malformed("bad header field value")
		}
		s, ok := internValue(v)
		if !ok {
			s, ok = room.str(v)
		}
		if !ok {
			spans = append(spans, valueSpan{field: n, from: len(raw), to: len(raw) + len(v)})
			raw = append(raw, v...)
		}
		keys, vals = append(keys, canonicalKey(line[:colon])), append(vals, s)
		n++
	}
	if len(spans) > 0 {
		all := string(raw)
		for _, sp := range spans {
			vals[sp.field] = all[sp.from:sp.to]
		}
	}
	return makeHeader(keys, vals, room), nil
}

// makeHeader puts the fields' values in one slice from room and makes
// the header over it: a field's values are a part of that slice, with no
// room to grow into the next field's.
func makeHeader(keys, vals []string, room *fieldRoom) http.Header {
	n := len(keys)
	h := make(http.Header, n)
	values := room.values(n)
	copy(values, vals)
	for i, k := range keys {
		if prior, ok := h[k]; ok {
			h[k] = append(prior[:len(prior):len(prior)], values[i])
			continue
		}
		h[k] = values[i : i+1 : i+1]
	}
	return h
}

// readLine returns the next line without its CRLF (or bare LF, which RFC
// 9112 section 2.2 lets a recipient take in a head), charging it to the
// budget. The slice is valid until the next read from br.
func readLine(br *bufio.Reader, budget *int) ([]byte, error) {
	line, err := readRawLine(br, budget)
	if err != nil {
		return nil, err
	}
	line = line[:len(line)-1]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	return line, nil
}

// readRawLine returns the next line with its LF, charging it to the budget;
// a line over the budget is errTooLarge. The slice is valid until the next
// read from br.
func readRawLine(br *bufio.Reader, budget *int) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		// A line longer than the buffer (a large token, say) is put
		// together on the heap, within the budget.
		long := append([]byte(nil), line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(long) > *budget {
				return nil, errTooLarge
			}
			line, err = br.ReadSlice('\n')
			long = append(long, line...)
		}
		line = long
	}
	if err != nil {
		return nil, err
	}
	if *budget -= len(line); *budget < 0 {
		return nil, errTooLarge
	}
	return line, nil
}

// parseStatusLine parses "HTTP/1.x SSS reason" and returns the status and
// the minor version digit.
func parseStatusLine(line []byte) (int, byte, error) {
	if len(line) < 12 || string(line[:7]) != "HTTP/1." || (line[7] != '0' && line[7] != '1') || line[8] != ' ' {
		return 0, 0, malformed("bad status line")
	}
	if len(line) > 12 && line[12] != ' ' {
		return 0, 0, malformed("bad status line")
	}
	s := 0
	for _, c := range line[9:12] {
		if c < '0' || c > '9' {
			return 0, 0, malformed("bad status code")
		}
		s = s*10 + int(c-'0')
	}
	if s < 100 {
		return 0, 0, malformed("bad status code")
	}
	return s, line[7], nil
}

// frame decides the body's framing from the status and fields. It checks
// Transfer-Encoding, Content-Length and Trailer whatever the status, as
// net/http does, so that it accepts no response net/http refuses.
func (h *Head) frame(minor byte) error {
	if hasCloseToken(h.Header["Connection"]) {
		h.Close = true
	}
	te, cl := h.Header["Transfer-Encoding"], h.Header["Content-Length"]
	chunked := len(te) > 0
	if chunked {
		// RFC 9112 section 6.1: Transfer-Encoding in HTTP/1.0 is faulty
		// framing. Like net/http, only one field saying chunked is taken:
		// nothing here would undo another coding.
		if minor == '0' {
			return malformed("Transfer-Encoding in HTTP/1.0")
		}
		if !onlyChunked(te) {
			return malformed("unsupported transfer coding")
		}
		if badTrailerDecl(h.Header["Trailer"]) {
			return malformed("bad Trailer field")
		}
	}
	n := int64(-1)
	if len(cl) > 0 {
		var err error
		if n, err = parseLength(cl); err != nil {
			return err
		}
	}
	switch {
	case h.Status < 200 || h.Status == http.StatusNoContent || h.Status == http.StatusNotModified:
		h.Framing = NoBody
	case chunked:
		h.Framing = Chunked
		if n >= 0 {
			h.Close = true // RFC 9112 section 6.3: close after such a message
		}
	case n >= 0:
		h.Framing, h.Length = Length, n
	default:
		h.Framing, h.Close = UntilClose, true
	}
	return nil
}

// onlyChunked reports whether Transfer-Encoding is one field saying
// chunked (any case), the only coding net/http takes.
func onlyChunked(te []string) bool {
	return len(te) == 1 && equalFold(trimOWS(te[0]), "chunked")
}

// badTrailerDecl reports whether a Trailer field announces a field that
// frames the message (RFC 9110 section 6.5.1); net/http refuses those.
func badTrailerDecl(values []string) bool {
	for _, v := range values {
		for len(v) > 0 {
			var name string
			name, v = nextItem(v)
			if equalFold(name, "Transfer-Encoding") || equalFold(name, "Content-Length") || equalFold(name, "Trailer") {
				return true
			}
		}
	}
	return false
}

// parseLength parses Content-Length values as net/http does: repeated
// fields must be the same text once OWS is trimmed, and that text is
// decimal digits (RFC 9110 section 8.6). A list ("5, 5") is refused, and so
// are "5" and "05" together: a recipient that reads one of them some other
// way must not be handed the message.
func parseLength(values []string) (int64, error) {
	if len(values) == 0 {
		return 0, malformed("bad Content-Length")
	}
	first := trimOWS(values[0])
	for _, v := range values[1:] {
		if trimOWS(v) != first {
			return 0, malformed("conflicting Content-Length")
		}
	}
	n, err := strconv.ParseUint(first, 10, 63)
	if err != nil {
		return 0, malformed("bad Content-Length")
	}
	return int64(n), nil
}

// validName reports whether b is an RFC 9110 token.
func validName[T string | []byte](b T) bool {
	for i := 0; i < len(b); i++ {
		if !isTokenChar(b[i]) {
			return false
		}
	}
	return len(b) > 0
}

func isTokenChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}

// validValue refuses control characters other than tab (CR, LF and NUL
// above all) in a field value.
func validValue[T string | []byte](b T) bool {
	for i := 0; i < len(b); i++ {
		if c := b[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// ValidValue reports whether s may be sent as a field value.
func ValidValue(s string) bool { return validValue(s) }

// canonicalKey returns the canonical form of a field name, without
// allocating for the names replicas commonly send.
func canonicalKey(b []byte) string {
	switch string(b) {
	case "Content-Type", "content-type":
		return "Content-Type"
	case "Content-Length", "content-length":
		return "Content-Length"
	case "Date", "date":
		return "Date"
	case "Mcp-Session-Id", "mcp-session-id":
		return "Mcp-Session-Id"
	case "Cache-Control", "cache-control":
		return "Cache-Control"
	case "Connection", "connection":
		return "Connection"
	case "Transfer-Encoding", "transfer-encoding":
		return "Transfer-Encoding"
	case "Vary", "vary":
		return "Vary"
	case "Server", "server":
		return "Server"
	case "Keep-Alive", "keep-alive":
		return "Keep-Alive"
	case "Host", "host":
		return "Host"
	case "Accept", "accept":
		return "Accept"
	case "Authorization", "authorization":
		return "Authorization"
	case "Mcp-Protocol-Version", "mcp-protocol-version":
		return "Mcp-Protocol-Version"
	case "Mcp-Method", "mcp-method":
		return "Mcp-Method"
	case "Mcp-Name", "mcp-name":
		return "Mcp-Name"
	case "User-Agent", "user-agent":
		return "User-Agent"
	case "Accept-Encoding", "accept-encoding":
		return "Accept-Encoding"
	case "Last-Event-ID", "Last-Event-Id", "last-event-id":
		return "Last-Event-Id"
	case "Expect", "expect":
		return "Expect"
	case "X-Forwarded-For", "x-forwarded-for":
		return "X-Forwarded-For"
	}
	return textproto.CanonicalMIMEHeaderKey(string(b))
}

// valueSpan is where a field's value lies in readFields' raw bytes.
type valueSpan struct{ field, from, to int }

// internValue returns common values without allocating; ok is false for
// the others.
func internValue(b []byte) (s string, ok bool) {
	switch string(b) {
	case "application/json":
		return "application/json", true
	case "text/event-stream":
		return "text/event-stream", true
	case "chunked":
		return "chunked", true
	case "no-cache":
		return "no-cache", true
	case "close":
		return "close", true
	case "keep-alive":
		return "keep-alive", true
	case "Accept-Encoding":
		return "Accept-Encoding", true
	case "application/json, text/event-stream":
		return "application/json, text/event-stream", true
	case "2026-07-28":
		return "2026-07-28", true
	case "2025-11-25":
		return "2025-11-25", true
	case "tools/call":
		return "tools/call", true
	case "*/*":
		return "*/*", true
	}
	return "", false
}

// hasToken reports whether the comma-separated list v holds token (any case).
func hasToken(v, token string) bool {
	for len(v) > 0 {
		var part string
		if part, v = nextItem(v); equalFold(part, token) {
			return true
		}
	}
	return false
}

// nextItem splits the first item, trimmed, off a comma-separated list.
func nextItem(v string) (item, rest string) {
	if i := strings.IndexByte(v, ','); i >= 0 {
		return trimOWS(v[:i]), v[i+1:]
	}
	return trimOWS(v), ""
}

func trimOWS(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// equalFold compares ASCII case-insensitively.
func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

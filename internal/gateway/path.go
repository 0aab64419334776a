package gateway

import (
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
)

// A path that one reader takes for another is refused before any route
// matches it, on every route: "/.well-known/oauth-protected-resource/../../admin"
// passes the gateway's prefix test as a discovery path, and the replica,
// resolving its dot-segments (RFC 3986 section 5.2.4), serves /admin. So a
// request target whose path holds a dot-segment ("." or "..", plain or
// percent-encoded in any case, even encoded twice, or with ";parameters"
// as servlet containers read it), an encoded slash, a backslash (a
// separator to some servers), a control byte or bytes that are not UTF-8
// (where overlong forms of "." and "/" hide) gets 400 and goes nowhere.
// The check reads the target as it came on the wire: neither server the
// gateway runs on (internal/h1, net/http) cleans paths, and the decoded
// URL.Path has lost the difference between "/" and "%2F".

// errPath answers a request target refused by ambiguousPath.
var errPath = &mcpmsg.Error{Status: http.StatusBadRequest, Code: mcpmsg.CodeInvalidRequest,
	Message: "request path with a dot-segment, an encoded slash, a backslash or bytes that are not UTF-8"}

// refusePath answers a request whose path ambiguousPath refuses, counted
// and logged as any refusal.
func (g *Gateway) refusePath(w http.ResponseWriter, r *http.Request) {
	rec := g.begin(r)
	defer g.finish(rec)
	rec.reject(w, errPath, nil)
}

// maxUnescapes bounds how many times one segment is percent-decoded: a
// segment that a further decoding would still change is refused.
const maxUnescapes = 4

// requestPath returns the path of r's request target as the client wrote
// it: the origin-form target up to its query, else (absolute form, or a
// request made in process) the URL's escaped path.
func requestPath(r *http.Request) string {
	t := r.RequestURI
	if t == "" || t[0] != '/' {
		return r.URL.EscapedPath()
	}
	if i := strings.IndexByte(t, '?'); i >= 0 {
		t = t[:i]
	}
	return t
}

// ambiguousPath reports whether the raw path p may read as another path.
func ambiguousPath(p string) bool {
	if plainPath(p) {
		return false // "/mcp": the common case costs one scan
	}
	if strings.IndexByte(p, '\\') >= 0 {
		return true
	}
	var buf [128]byte
	for seg := range strings.SplitSeq(p, "/") {
		dec, ok := []byte(nil), true
		if strings.IndexByte(seg, '%') >= 0 {
			dec, ok = unescapeFully(buf[:0], seg)
		} else {
			dec = append(buf[:0], seg...)
		}
		if !ok || dotSegment(dec) || !cleanSegment(dec) {
			return true
		}
	}
	return false
}

// plainPath reports a path of visible ASCII without '%', '.' or '\\'.
func plainPath(p string) bool {
	for i := 0; i < len(p); i++ {
		if c := p[i]; c <= ' ' || c >= 0x7f || c == '%' || c == '.' || c == '\\' {
			return false
		}
	}
	return true
}

// dotSegment reports "." or "..", alone or before ";parameters".
func dotSegment[T string | []byte](seg T) bool {
	for i := 0; i < len(seg); i++ {
		if seg[i] == ';' {
			seg = seg[:i]
			break
		}
	}
	return len(seg) == 1 && seg[0] == '.' || len(seg) == 2 && seg[0] == '.' && seg[1] == '.'
}

// cleanSegment reports a decoded segment that holds no separator, no
// control byte and only UTF-8.
func cleanSegment(b []byte) bool {
	for _, c := range b {
		if c == '/' || c == '\\' || c < ' ' || c == 0x7f {
			return false
		}
	}
	return utf8.Valid(b)
}

// unescapeFully percent-decodes seg into dst until nothing changes
// ("%252e" is "%2e", then "."); false when it still changes after
// maxUnescapes decodings. A '%' not followed by two hex digits stays as it is.
func unescapeFully(dst []byte, seg string) ([]byte, bool) {
	cur := append(dst, seg...)
	for i := 0; ; i++ {
		next, changed := unescapeOnce(cur)
		if !changed {
			return next, true
		}
		if i == maxUnescapes {
			return next, false
		}
		cur = next
	}
}

// unescapeOnce decodes every valid escape of b in place, left to right.
func unescapeOnce(b []byte) ([]byte, bool) {
	w, changed := 0, false
	for r := 0; r < len(b); r++ {
		c := b[r]
		if c == '%' && r+2 < len(b) && isHex(b[r+1]) && isHex(b[r+2]) {
			c, r, changed = unhex(b[r+1])<<4|unhex(b[r+2]), r+2, true
		}
		b[w] = c
		w++
	}
	return b[:w], changed
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

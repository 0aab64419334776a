package sse

import "bytes"

// StripID appends to dst the event block without its id lines and without
// the blank line that ends it, so that a relay can end the event with an
// "id: " line of its own and a blank line: every other line, comments
// included, keeps its place, with LF line ends, and blank lines before the
// event (which dispatch nothing) go. It also returns the block's own ID, the
// value of its last id line, if it had one; an id with a NUL is ignored, as
// a client ignores it.
func StripID(dst, block []byte) (out []byte, own string, hadOwn bool) {
	for len(block) > 0 {
		var line []byte
		line, block = cutLine(block)
		if len(line) == 0 {
			continue
		}
		if name, value, _ := bytes.Cut(line, []byte{':'}); string(name) == "id" {
			value = bytes.TrimPrefix(value, []byte{' '})
			if bytes.IndexByte(value, 0) < 0 {
				own, hadOwn = string(value), true
			}
			continue
		}
		dst = append(dst, line...)
		dst = append(dst, '\n')
	}
	return dst, own, hadOwn
}

// SetID appends to dst the event block with its id field set to id, which
// must hold no line break: StripID, then "id: " id and the blank line.
func SetID(dst, block []byte, id string) (out []byte, own string, hadOwn bool) {
	out, own, hadOwn = StripID(dst, block)
	out = append(out, "id: "...)
	out = append(out, id...)
	return append(out, '\n', '\n'), own, hadOwn
}

// IsComment reports whether block holds nothing but comments and blank
// lines (a keep-alive): it dispatches nothing and carries no ID.
func IsComment(block []byte) bool {
	for len(block) > 0 {
		var line []byte
		line, block = cutLine(block)
		if len(line) > 0 && line[0] != ':' {
			return false
		}
	}
	return true
}

// cutLine splits off the first line of b as the SSE format reads lines:
// ended by CRLF, LF or a lone CR (WHATWG HTML, "Server-sent events").
func cutLine(b []byte) (line, rest []byte) {
	i := bytes.IndexAny(b, "\r\n")
	if i < 0 {
		return b, nil
	}
	if b[i] == '\r' && i+1 < len(b) && b[i+1] == '\n' {
		return b[:i], b[i+2:]
	}
	return b[:i], b[i+1:]
}

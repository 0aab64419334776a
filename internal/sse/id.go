package sse

import "bytes"

// StripID appends to dst the event block without its id lines and without
// the blank line that ends it, so that a relay can end the event with an
// "id: " line of its own and a blank line: every other line, comments
// included, keeps its place and its bytes, and blank lines before the
// event (which dispatch nothing) go. It also returns the block's own ID, the
// value of its last id line, if it had one; an id with a NUL is ignored, as
// a client ignores it.
func StripID(dst, block []byte) (out []byte, own string, hadOwn bool) {
	out, _, own, hadOwn = stripID(dst, block, true)
	return out, own, hadOwn
}

// StrippedLen returns the length StripID would append and the block's own
// ID, without copying: a caller sizes the event it seals exactly.
func StrippedLen(block []byte) (n int, own string, hadOwn bool) {
	_, n, own, hadOwn = stripID(nil, block, false)
	return n, own, hadOwn
}

// stripID is StripID, appending only when write is set; n is what it
// appends (or would).
func stripID(dst, block []byte, write bool) (out []byte, n int, own string, hadOwn bool) {
	for len(block) > 0 {
		var raw []byte
		raw, block, _ = bytes.Cut(block, []byte{'\n'})
		line := bytes.TrimSuffix(raw, []byte{'\r'})
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
		// The line as it came, its CR included: a line of its own that
		// ends in a second CR ("\r\r\n") must not become a blank line.
		n += len(raw) + 1
		if write {
			dst = append(dst, raw...)
			dst = append(dst, '\n')
		}
	}
	return dst, n, own, hadOwn
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
		line, block, _ = bytes.Cut(block, []byte{'\n'})
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if len(line) > 0 && line[0] != ':' {
			return false
		}
	}
	return true
}

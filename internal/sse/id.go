package sse

import "bytes"

// SetID appends to dst the event block with its id field set to id, for a
// relay that gives every event an ID of its own: each id line of the block
// goes, and one "id: " line ends the event; every other line, comments
// included, keeps its place, with LF line ends, and blank lines before the
// event (which dispatch nothing) go. It also returns the block's own ID, the
// value of its last id line, if it had one; an id with a NUL is ignored, as
// a client ignores it. id must hold no line break.
func SetID(dst, block []byte, id string) (out []byte, own string, hadOwn bool) {
	for len(block) > 0 {
		var line []byte
		line, block, _ = bytes.Cut(block, []byte{'\n'})
		line = bytes.TrimSuffix(line, []byte{'\r'})
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
	dst = append(dst, "id: "...)
	dst = append(dst, id...)
	return append(dst, '\n', '\n'), own, hadOwn
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

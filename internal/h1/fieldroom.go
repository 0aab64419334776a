package h1

import "unsafe"

// fieldRoom is room for a head's field values inside the allocation that
// holds its request (exchange) or answer: the values' slice and the bytes
// of the values that are not common ones (internValue). What fits costs no
// allocation of its own; what does not goes to the heap as before.
//
// The room is handed out front to back and nothing in it is ever written
// twice: a string made over its bytes (unsafe.String) is as immutable as
// any other for as long as something holds it. The structures that embed
// the arrays are made for one request or answer and never reused, which is
// what keeps that true: do not pool them.
type fieldRoom struct {
	vals []string // free values: length 0, capacity what is left
	raw  []byte   // free bytes: length 0, capacity what is left
}

// roomFor returns the room of a head whose values go in vals and raw.
func roomFor(vals []string, raw []byte) fieldRoom {
	return fieldRoom{vals: vals[:0], raw: raw[:0]}
}

// values returns n values' room, taken from r when it has that much left.
func (r *fieldRoom) values(n int) []string {
	if n > cap(r.vals) {
		return make([]string, n)
	}
	v := r.vals[:n:n]
	r.vals = r.vals[n:n]
	return v
}

// str returns b as a string over r's bytes, and false when r has no room
// for it.
func (r *fieldRoom) str(b []byte) (string, bool) {
	if len(b) == 0 || len(b) > cap(r.raw) {
		return "", len(b) == 0
	}
	dst := r.raw[:len(b):len(b)]
	copy(dst, b)
	r.raw = r.raw[len(b):len(b)]
	return unsafe.String(&dst[0], len(dst)), true
}

// requestFields is the room of a request's values on the server: ten
// fields and 88 bytes hold a client's usual head (Host, a short bearer
// token, Content-Length, Mcp-Name and the common values, which take no
// bytes); the exchange it is a part of stays in its size class.
type requestFields struct {
	vals [10]string
	raw  [88]byte
}

func (f *requestFields) room() fieldRoom { return roomFor(f.vals[:], f.raw[:]) }

// answerFields is the room of a replica's answer's values on the client:
// six fields and 80 bytes hold a Go SDK server's usual head (Date,
// Content-Length, Mcp-Session-Id and the common values).
type answerFields struct {
	vals [6]string
	raw  [80]byte
}

func (f *answerFields) room() fieldRoom { return roomFor(f.vals[:], f.raw[:]) }

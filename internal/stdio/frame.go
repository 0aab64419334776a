package stdio

import (
	"bytes"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
)

// frame is a JSON-RPC message as the mux reads it: where its top-level
// members are in the message's own bytes, found by one strict scan
// (mcpmsg.Members), so that an id or a progress token is rewritten in
// place and the rest of the message goes on as it came, byte for byte.
// A message that names a member twice is refused, at the top and in the
// objects the mux reads (params, params._meta): the mux and the child
// must see one message, not the first spelling and the last.
type frame struct {
	b []byte // the message, without the whitespace around it
	// Where the members are in b; the zero span when absent.
	id, method, params, result, error span
}

// span is where a value is in a message, [start, end); the zero span
// stands for an absent one (no value starts at 0 inside an object).
type span struct{ start, end int }

func (s span) present() bool { return s.end > 0 }

// errNotObject: a message that is not one JSON object.
var errNotObject = errors.New("decoding message: not a JSON-RPC object")

func parseFrame(msg []byte) (frame, error) {
	msg = bytes.TrimSpace(msg)
	if !utf8.Valid(msg) {
		msg = validUTF8(msg)
	}
	if len(msg) > 0 && msg[0] == '[' {
		return frame{}, ErrBatch
	}
	f := frame{b: msg}
	err := mcpmsg.Members(msg, func(key []byte, s, e int) error {
		switch string(key) {
		case "id":
			f.id = span{s, e}
		case "method":
			f.method = span{s, e}
		case "params":
			f.params = span{s, e}
		case "result":
			f.result = span{s, e}
		case "error":
			f.error = span{s, e}
		}
		return nil
	})
	switch {
	case errors.Is(err, mcpmsg.ErrDuplicateMember):
		return frame{}, fmt.Errorf("decoding message: %w", err)
	case err != nil:
		return frame{}, errNotObject
	}
	return f, nil
}

// raw returns the bytes of a member; empty when absent.
func (f *frame) raw(s span) []byte { return f.b[s.start:s.end] }

// rawID returns the message's id as written; empty when it has none.
func (f *frame) rawID() []byte { return f.raw(f.id) }

// methodName returns the method, "" when absent or not a string.
func (f *frame) methodName() string {
	s, _ := mcpmsg.String(f.raw(f.method))
	return s
}

func (f *frame) isRequest() bool { return f.method.present() && hasID(f.rawID()) }

// param returns where params[key] is in the message: absent when params
// is not an object or has no such member.
func (f *frame) param(key string) (span, error) { return memberOf(f.b, f.params, key) }

// progressToken returns where params._meta.progressToken is.
func (f *frame) progressToken() (span, error) {
	meta, err := f.param("_meta")
	if err != nil || !meta.present() {
		return span{}, err
	}
	return memberOf(f.b, meta, "progressToken")
}

// paramString returns params[key] when it is a string; "" otherwise.
func (f *frame) paramString(key string) (string, error) {
	at, err := f.param(key)
	if err != nil {
		return "", err
	}
	s, _ := mcpmsg.String(f.raw(at))
	return s, nil
}

// memberOf returns where member key of the object at b[in] is in b:
// absent when in is absent, or not an object, or has no such member.
// The object is read as strictly as a message: naming a member twice is
// an error.
func memberOf(b []byte, in span, key string) (span, error) {
	obj := b[in.start:in.end]
	if len(obj) == 0 || obj[0] != '{' {
		return span{}, nil
	}
	var at span
	err := mcpmsg.Members(obj, func(k []byte, s, e int) error {
		if string(k) == key {
			at = span{in.start + s, in.start + e}
		}
		return nil
	})
	if err != nil {
		return span{}, fmt.Errorf("decoding the object holding %s: %w", key, err)
	}
	return at, nil
}

// edit replaces the value at at by with; an edit at the zero span is
// none.
type edit struct {
	at   span
	with []byte
}

// splice returns a new message: b with edits a and c applied, which do
// not overlap (in either order).
func splice(b []byte, a, c edit) []byte {
	if c.at.present() && (!a.at.present() || c.at.start < a.at.start) {
		a, c = c, a
	}
	n := len(b)
	for _, e := range [2]edit{a, c} {
		if e.at.present() {
			n += len(e.with) - (e.at.end - e.at.start)
		}
	}
	out := make([]byte, 0, n)
	last := 0
	for _, e := range [2]edit{a, c} {
		if e.at.present() {
			out = append(append(out, b[last:e.at.start]...), e.with...)
			last = e.at.end
		}
	}
	return append(out, b[last:]...)
}

// validUTF8 returns msg with each byte that is not part of valid UTF-8
// replaced by U+FFFD, as encoding/json decodes it (RFC 8259 wants UTF-8):
// a message goes on in one spelling, whichever side wrote it.
func validUTF8(msg []byte) []byte {
	out := make([]byte, 0, len(msg)+8)
	for len(msg) > 0 {
		r, n := utf8.DecodeRune(msg)
		if r == utf8.RuneError && n == 1 {
			out = append(out, "\uFFFD"...)
		} else {
			out = append(out, msg[:n]...)
		}
		msg = msg[n:]
	}
	return out
}

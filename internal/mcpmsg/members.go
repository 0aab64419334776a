package mcpmsg

import "errors"

// ErrDuplicateMember: a JSON object names one member twice. A reader that
// keeps the first and one that keeps the last (encoding/json, JavaScript's
// JSON.parse) would see two different messages in it (RFC 8259 section 4:
// "The names within an object SHOULD be unique"), so a message rewritten
// in place must have one spelling only.
var ErrDuplicateMember = errors.New("json object: a member is named twice")

// Members walks obj, one JSON object with nothing but whitespace around
// it, and calls fn with each member's key, decoded, and the bounds of its
// value in obj, [start, end). It validates as Parse does, without building
// anything: bytes that are not JSON are ErrParse, a JSON value that is not
// an object is ErrInvalidRequest, and an object that names a member twice
// is ErrDuplicateMember (objects nested in its values are checked as JSON
// only). An error of fn ends the walk and is returned. The key is valid
// only during the call; comparing it as string(key) does not allocate.
func Members(obj []byte, fn func(key []byte, start, end int) error) error {
	i := skipWS(obj, 0)
	if i >= len(obj) {
		return ErrParse
	}
	if obj[i] != '{' {
		if _, err := skipValue(obj, i, 0); err != nil {
			return ErrParse
		}
		return ErrInvalidRequest
	}
	var seen keySet
	end, err := eachMember(obj, i, 1, func(key []byte, s, e int) error {
		if seen.add(key) {
			return ErrDuplicateMember
		}
		return fn(key, s, e)
	})
	switch {
	case errors.Is(err, errSyntax):
		return ErrParse
	case err != nil:
		return err
	case skipWS(obj, end) != len(obj):
		return ErrParse
	}
	return nil
}

// String returns the Go string of raw, one complete JSON string token
// (quotes included), and false for any other value. The methods and
// versions most messages carry cost no allocation.
func String(raw []byte) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	s, err := rawString(raw)
	return s, err == nil
}

// keySet is the keys of one object seen so far: a few kept in place,
// more in a map, so that a message's handful of members costs no
// allocation and an object of many members no quadratic time.
type keySet struct {
	few  [8][]byte
	n    int
	many map[string]struct{}
}

// add notes key and reports whether it was seen before. Keys are kept
// as given: eachMember's keys stay valid (a slice of the object, or a
// decoded copy of their own).
func (k *keySet) add(key []byte) (seen bool) {
	if k.many != nil {
		if _, seen = k.many[string(key)]; !seen {
			k.many[string(key)] = struct{}{}
		}
		return seen
	}
	for _, s := range k.few[:k.n] {
		if string(s) == string(key) {
			return true
		}
	}
	if k.n < len(k.few) {
		k.few[k.n] = key
		k.n++
		return false
	}
	k.many = make(map[string]struct{}, 2*len(k.few))
	for _, s := range k.few {
		k.many[string(s)] = struct{}{}
	}
	k.many[string(key)] = struct{}{}
	return false
}

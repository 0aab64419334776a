package mcpmsg

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"unicode/utf8"
)

// ErrNoCanonical reports a JSON value that Canonical will not spell: a
// string in it is not valid UTF-8 or holds a lone surrogate escape, which
// a decoder turns into U+FFFD, so that two different values would share
// one spelling.
var ErrNoCanonical = errors.New("canonical json: a string is not valid unicode")

// Canonical returns one spelling of the JSON value raw: object members
// sorted by key (bytewise on the decoded key, as encoding/json sorts a
// map's), no insignificant whitespace, numbers as written, strings escaped
// one way (encoding/json's). Values that differ never share a spelling:
// members of one object that repeat a key are all kept, in their order,
// and a value whose strings are not valid Unicode is refused
// (ErrNoCanonical). Bytes that are not one JSON value are refused too.
func Canonical(raw []byte) ([]byte, error) {
	return canonical(nil, raw, false)
}

// canonical appends raw's canonical spelling to dst; dropMeta leaves out
// the top-level object's _meta member.
func canonical(dst, raw []byte, dropMeta bool) ([]byte, error) {
	i := skipWS(raw, 0)
	end, err := skipValue(raw, i, 0)
	if err != nil || skipWS(raw, end) != len(raw) {
		return nil, errSyntax
	}
	if err := checkStrings(raw); err != nil {
		return nil, err
	}
	return canonValue(dst, raw[i:end], dropMeta)
}

// canonValue appends the canonical spelling of v, one valid JSON value
// with no surrounding space whose strings checkStrings passed.
func canonValue(dst, v []byte, dropMeta bool) ([]byte, error) {
	switch v[0] {
	case '{':
		return canonObject(dst, v, dropMeta)
	case '[':
		return canonArray(dst, v)
	case '"':
		_, escaped, err := scanString(v, 0)
		if err != nil {
			return nil, err
		}
		if !escaped {
			// The raw contents are the string: spelt as AppendString
			// would, without decoding them first.
			return appendQuoted(dst, v[1:len(v)-1]), nil
		}
		s, err := stringValue(v, true)
		if err != nil {
			return nil, err
		}
		return AppendString(dst, s), nil
	}
	return append(dst, v...), nil // a number or a literal, as written
}

func canonObject(dst, v []byte, dropMeta bool) ([]byte, error) {
	type member struct {
		key, val []byte // key decoded: the raw bytes when it has no escape
	}
	var room [8]member
	members := room[:0]
	_, err := eachMember(v, 0, 0, func(key []byte, s, e int) error {
		if dropMeta && string(key) == "_meta" {
			return nil
		}
		members = append(members, member{key, v[s:e]})
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(members, func(a, b member) int { return bytes.Compare(a.key, b.key) })
	dst = append(dst, '{')
	for n, m := range members {
		if n > 0 {
			dst = append(dst, ',')
		}
		dst = append(appendQuoted(dst, m.key), ':')
		if dst, err = canonValue(dst, m.val, false); err != nil {
			return nil, err
		}
	}
	return append(dst, '}'), nil
}

func canonArray(dst, v []byte) ([]byte, error) {
	dst = append(dst, '[')
	i := skipWS(v, 1)
	for n := 0; v[i] != ']'; n++ {
		end, err := skipValue(v, i, 0)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		if dst, err = canonValue(dst, v[i:end], false); err != nil {
			return nil, err
		}
		i = skipWS(v, end)
		if v[i] == ',' {
			i = skipWS(v, i+1)
		}
	}
	return append(dst, ']'), nil
}

// AppendString appends s as a JSON string, escaped as encoding/json
// escapes it; a string with nothing to escape, the most, as it is.
func AppendString(dst []byte, s string) []byte { return appendQuoted(dst, s) }

// appendQuoted is AppendString for a string held either way, so that the
// canonical spelling appends a key or value it has as bytes without a
// copy to a string first.
func appendQuoted[S ~string | ~[]byte](dst []byte, s S) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20, c == '"', c == '\\', c == '<', c == '>', c == '&', c == 0xE2: // 0xE2: U+2028, U+2029
			b, _ := json.Marshal(string(s)) // a string always marshals
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// checkStrings refuses the strings a decoder would change without saying:
// invalid UTF-8, and a surrogate escape that is not one half of a pair.
// b is valid JSON, so a quote outside a string starts one.
func checkStrings(b []byte) error {
	if !utf8.Valid(b) {
		return ErrNoCanonical
	}
	for i := 0; i < len(b); i++ {
		if b[i] != '"' {
			continue
		}
		end, escaped, err := scanString(b, i)
		if err != nil {
			return err
		}
		if escaped && loneSurrogate(b[i+1:end-1]) {
			return ErrNoCanonical
		}
		i = end - 1
	}
	return nil
}

// loneSurrogate reports a \uD800-\uDFFF escape in s (a string's escaped
// contents) that is not a high half followed at once by a low half.
func loneSurrogate(s []byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		i++
		if s[i] != 'u' {
			continue
		}
		r := hex4(s[i+1 : i+5])
		i += 4
		switch {
		case r >= 0xDC00 && r < 0xE000:
			return true
		case r >= 0xD800 && r < 0xDC00:
			if len(s)-i < 7 || s[i+1] != '\\' || s[i+2] != 'u' {
				return true
			}
			if lo := hex4(s[i+3 : i+7]); lo < 0xDC00 || lo >= 0xE000 {
				return true
			}
			i += 6
		}
	}
	return false
}

// hex4 decodes four hex digits (isHex4 passed them).
func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		default:
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}

// RequestDigest returns a digest of what one JSON-RPC request asks, the
// same however it is spelled: a hex SHA-256 of its method and its params
// in canonical spelling (Canonical), params._meta left out (it says how
// the request travels, a progress token, a trace, an idempotency key, not
// what it asks). Params that have no canonical spelling are digested as
// written, which only ever tells requests apart. The id is not in it: two
// requests with one id and one digest ask the same thing.
func RequestDigest(body []byte) string {
	var method, params []byte
	i := skipWS(body, 0)
	if i < len(body) && body[i] == '{' {
		_, _ = eachMember(body, i, 1, func(key []byte, s, e int) error {
			switch string(key) {
			case "method":
				method = body[s:e]
			case "params":
				params = body[s:e]
			}
			return nil
		})
	}
	// What is hashed, built in one buffer lent by digestBufs: the
	// method's length and the method, then a tag and the params,
	// canonical ('c') or as written ('w'), or no params ('-').
	bp := digestBufs.Get().(*[]byte)
	defer putDigestBuf(bp)
	b := binary.BigEndian.AppendUint64((*bp)[:0], uint64(len(method)))
	b = append(b, method...)
	if params == nil {
		b = append(b, '-')
	} else if c, err := canonical(append(b, 'c'), params, true); err == nil {
		b = c
	} else {
		b = append(append(b, 'w'), params...)
	}
	sum := sha256.Sum256(b)
	*bp = b
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], sum[:])
	return string(out[:])
}

// digestBufs lends RequestDigest its buffers; one grown past
// maxDigestBuf by a large call is not kept.
var digestBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

const maxDigestBuf = 64 << 10

func putDigestBuf(bp *[]byte) {
	if cap(*bp) <= maxDigestBuf {
		*bp = (*bp)[:0]
		digestBufs.Put(bp)
	}
}

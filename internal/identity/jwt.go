package identity

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// fromJWT returns the identity issuer+subject of a bearer token that is a
// JWS compact serialisation (RFC 7515 section 7.1): three base64url segments
// without padding, the payload a JSON object whose "iss" and "sub" claims
// (RFC 7519 section 4.1) are non-empty strings. Nothing is verified: the
// header and signature are only checked to be base64url.
func fromJWT(tok string) (Identity, bool) {
	header, rest, ok1 := strings.Cut(tok, ".")
	payload, sig, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || header == "" || payload == "" ||
		!isBase64URL(header) || !isBase64URL(payload) || !isBase64URL(sig) {
		return Identity{}, false
	}
	// Most payloads fit the stack buffer; a token is at most
	// MaxCredentialLen, which bounds the rest.
	var buf [1024]byte
	dst := buf[:]
	if n := base64.RawURLEncoding.DecodedLen(len(payload)); n > len(dst) {
		dst = make([]byte, n)
	}
	n, err := base64.RawURLEncoding.Decode(dst, []byte(payload))
	if err != nil || !json.Valid(dst[:n]) {
		return Identity{}, false
	}
	issRaw, subRaw := issuerSubject(dst[:n])
	iss, ok1 := jsonString(issRaw)
	sub, ok2 := jsonString(subRaw)
	if !ok1 || !ok2 || len(iss) == 0 || len(sub) == 0 {
		return Identity{}, false
	}
	return Identity{kind: KindJWT, value: joinIssuerSubject(iss, sub)}, true
}

// isBase64URL reports whether s uses only the unpadded base64url alphabet
// (RFC 4648 section 5). It also keeps out the line breaks that the base64
// decoder would otherwise skip.
func isBase64URL(s string) bool {
	for i := 0; i < len(s); i++ {
		if byteClass[s[i]]&classBase64 == 0 {
			return false
		}
	}
	return true
}

// joinIssuerSubject encodes issuer and subject as decimal len(iss) ":" iss
// sub, so that no other pair shares the encoding, in one allocation.
func joinIssuerSubject(iss, sub []byte) string {
	var num [20]byte
	prefix := strconv.AppendInt(num[:0], int64(len(iss)), 10)
	var b strings.Builder
	b.Grow(len(prefix) + 1 + len(iss) + len(sub))
	b.Write(prefix)
	b.WriteByte(':')
	b.Write(iss)
	b.Write(sub)
	return b.String()
}

// jsonString decodes a raw JSON string token (quotes included). The common
// case, no escapes and valid UTF-8, returns a sub-slice of raw; otherwise
// encoding/json decodes it, so that the result matches a full decode
// (escapes resolved, invalid UTF-8 replaced). Anything but a string is false.
func jsonString(raw []byte) ([]byte, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return nil, false
	}
	if in := raw[1 : len(raw)-1]; bytes.IndexByte(in, '\\') < 0 && utf8.Valid(in) {
		return in, true
	}
	// The clone keeps raw from escaping, so the caller's buffer can stay on
	// the stack; this path is rare.
	var s string
	if json.Unmarshal(bytes.Clone(raw), &s) != nil {
		return nil, false
	}
	return []byte(s), true
}

// issuerSubject returns the raw values of the top-level "iss" and "sub"
// members of obj, which must be valid JSON (json.Valid). Keys match exactly,
// as RFC 7519 requires (encoding/json's structs would fold case), and a
// repeated member counts by its last occurrence, as RFC 7519 section 4
// allows. A missing member, or a payload that is not an object, gives nil.
func issuerSubject(obj []byte) (iss, sub []byte) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil, nil
	}
	i++
	for {
		i = skipSpace(obj, i)
		if i >= len(obj) || obj[i] != '"' {
			return iss, sub // '}': the object is over
		}
		keyEnd := stringEnd(obj, i)
		key := obj[i:keyEnd]
		i = skipSpace(obj, keyEnd)
		if i >= len(obj) || obj[i] != ':' {
			return nil, nil
		}
		i = skipSpace(obj, i+1)
		valEnd := valueEnd(obj, i)
		switch val := obj[i:valEnd]; {
		case keyIs(key, "iss"):
			iss = val
		case keyIs(key, "sub"):
			sub = val
		}
		i = skipSpace(obj, valEnd)
		if i >= len(obj) || obj[i] != ',' {
			return iss, sub
		}
		i++
	}
}

// keyIs reports whether the raw JSON string key decodes to name.
func keyIs(key []byte, name string) bool {
	if bytes.IndexByte(key, '\\') < 0 {
		return len(key) == len(name)+2 && string(key[1:len(key)-1]) == name
	}
	s, ok := jsonString(key)
	return ok && string(s) == name
}

// skipSpace returns the offset of the first non-whitespace byte at or after
// i (JSON whitespace, RFC 8259 section 2).
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the offset just past the JSON string that opens at i.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// valueEnd returns the offset just past the valid JSON value at i.
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return len(b)
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); {
			switch b[j] {
			case '"':
				j = stringEnd(b, j)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
			j++
		}
		return len(b)
	}
	j := i // a number or a literal
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && skipSpace(b, j) == j {
		j++
	}
	return j
}

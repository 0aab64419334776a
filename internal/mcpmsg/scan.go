package mcpmsg

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// errSyntax reports bytes that are not valid JSON.
var errSyntax = errors.New("invalid json")

// The scanner below walks JSON without building values: routing needs a few
// members of the envelope (method, id, params.name, params._meta), so the rest
// of the body is skipped byte by byte instead of decoded. Every function takes
// the whole buffer and an offset and returns the offset after what it read.

func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipValue returns the offset just past the JSON value that starts at i
// (after optional whitespace).
func skipValue(b []byte, i int, depth int) (int, error) {
	if depth > maxDepth {
		return 0, errSyntax
	}
	i = skipWS(b, i)
	if i >= len(b) {
		return 0, errSyntax
	}
	switch c := b[i]; {
	case c == '"':
		end, _, err := scanString(b, i)
		return end, err
	case c == '{':
		return skipObject(b, i, depth)
	case c == '[':
		return skipArray(b, i, depth)
	case c == 't':
		return skipLiteral(b, i, "true")
	case c == 'f':
		return skipLiteral(b, i, "false")
	case c == 'n':
		return skipLiteral(b, i, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		return skipNumber(b, i)
	}
	return 0, errSyntax
}

// maxDepth bounds nesting so a hostile body cannot exhaust the stack.
const maxDepth = 512

func skipLiteral(b []byte, i int, lit string) (int, error) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return 0, errSyntax
	}
	return i + len(lit), nil
}

// skipNumber follows the JSON number grammar (RFC 8259 section 6).
func skipNumber(b []byte, i int) (int, error) {
	if b[i] == '-' {
		i++
	}
	if i >= len(b) {
		return 0, errSyntax
	}
	switch {
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		i = skipDigits(b, i)
	default:
		return 0, errSyntax
	}
	if i < len(b) && b[i] == '.' {
		j := skipDigits(b, i+1)
		if j == i+1 {
			return 0, errSyntax
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := skipDigits(b, i)
		if j == i {
			return 0, errSyntax
		}
		i = j
	}
	return i, nil
}

func skipDigits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// scanString reads the string that starts at b[i] == '"'. It returns the
// offset past the closing quote and whether the string holds escapes (then
// its raw bytes must be unquoted before use).
func scanString(b []byte, i int) (end int, escaped bool, err error) {
	for i++; ; i++ {
		// Eight bytes at a time over the string's plain run: none is a
		// quote, a backslash or a control character.
		for i+8 <= len(b) && !special8(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		if i >= len(b) {
			return 0, false, errSyntax
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, escaped, nil
		case c == '\\':
			escaped = true
			i++
			if i >= len(b) {
				return 0, false, errSyntax
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(b)-i < 5 || !isHex4(b[i+1:i+5]) {
					return 0, false, errSyntax
				}
				i += 4
			default:
				return 0, false, errSyntax
			}
		case c < 0x20:
			return 0, false, errSyntax
		}
	}
}

// special8 reports whether one of the eight bytes in x is a quote, a
// backslash or below 0x20 (the bit tricks of "Bit Twiddling Hacks",
// "Determine if a word has a zero byte" and "... a byte less than n",
// which are exact about whether one is there).
func special8(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q, bs := x^(ones*'"'), x^(ones*'\\')
	return ((q-ones)&^q|(bs-ones)&^bs|(x-ones*0x20)&^x)&highs != 0
}

func isHex4(b []byte) bool {
	for _, c := range b[:4] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// stringValue returns the Go string for the JSON string at b[i:end]. Only
// strings with escapes (or invalid UTF-8) pay for a decode.
func stringValue(raw []byte, escaped bool) (string, error) {
	if !escaped && utf8.Valid(raw) {
		if s, ok := internString(raw[1 : len(raw)-1]); ok {
			return s, nil
		}
		return string(raw[1 : len(raw)-1]), nil
	}
	// Escapes, or invalid UTF-8 that encoding/json turns into U+FFFD.
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", errSyntax
	}
	return s, nil
}

func skipArray(b []byte, i int, depth int) (int, error) {
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for {
		var err error
		if i, err = skipValue(b, i, depth+1); err != nil {
			return 0, err
		}
		i = skipWS(b, i)
		if i >= len(b) {
			return 0, errSyntax
		}
		switch b[i] {
		case ',':
			i++
		case ']':
			return i + 1, nil
		default:
			return 0, errSyntax
		}
	}
}

func skipObject(b []byte, i int, depth int) (int, error) {
	return eachMember(b, i, depth, func([]byte, int, int) error { return nil })
}

// eachMember walks the object at b[i] == '{' and calls fn with each member's
// key and the bounds of its value. It returns the offset past the object.
// The key is valid only during the call; comparing it as string(key) does
// not allocate.
func eachMember(b []byte, i int, depth int, fn func(key []byte, start, end int) error) (int, error) {
	if depth > maxDepth {
		return 0, errSyntax
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		i = skipWS(b, i)
		if i >= len(b) || b[i] != '"' {
			return 0, errSyntax
		}
		kend, kesc, err := scanString(b, i)
		if err != nil {
			return 0, err
		}
		key := b[i+1 : kend-1]
		if kesc || !utf8.Valid(key) {
			k, err := stringValue(b[i:kend], kesc)
			if err != nil {
				return 0, err
			}
			key = []byte(k)
		}
		i = skipWS(b, kend)
		if i >= len(b) || b[i] != ':' {
			return 0, errSyntax
		}
		start := skipWS(b, i+1)
		end, err := skipValue(b, start, depth+1)
		if err != nil {
			return 0, err
		}
		if err := fn(key, start, end); err != nil {
			return 0, err
		}
		i = skipWS(b, end)
		if i >= len(b) {
			return 0, errSyntax
		}
		switch b[i] {
		case ',':
			i++
		case '}':
			return i + 1, nil
		default:
			return 0, errSyntax
		}
	}
}

// internString returns the methods and protocol versions that nearly every
// message carries without allocating a string for each.
func internString(b []byte) (string, bool) {
	switch string(b) {
	case "tools/call":
		return "tools/call", true
	case "tools/list":
		return "tools/list", true
	case "initialize":
		return "initialize", true
	case "notifications/initialized":
		return "notifications/initialized", true
	case "notifications/cancelled":
		return "notifications/cancelled", true
	case "notifications/progress":
		return "notifications/progress", true
	case "ping":
		return "ping", true
	case "resources/read":
		return "resources/read", true
	case "resources/list":
		return "resources/list", true
	case "prompts/get":
		return "prompts/get", true
	case "prompts/list":
		return "prompts/list", true
	case Version20260728:
		return Version20260728, true
	case Version20251125:
		return Version20251125, true
	case "2.0":
		return "2.0", true
	}
	return "", false
}

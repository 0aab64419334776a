package mcpmsg

import (
	"strings"
	"testing"
)

// scanStringRef is scanString a byte at a time, as it was before it
// skipped plain runs eight bytes at a time: the reference it must agree
// with.
func scanStringRef(b []byte, i int) (end int, escaped bool, err error) {
	for i++; i < len(b); i++ {
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
	return 0, false, errSyntax
}

var scanStringSeeds = []string{
	`""`, `"a"`, `"abcdefgh"`, `"abcdefghi"`, `"abcdefg\"h"`, `"0123456789abcdef\n"`,
	`"unterminated`, `"abcdefgh\`, `"abcdefgh\u00e9"`, `"abcdefgh\u00"`, `"été et hiver, 𝄞"`,
	"\"abcdefg\x1f\"", "\"abcdefgh\x7f\x80\xff\"", `"a\\b\/c\bd\fe\nf\rg\th"`, `"abcdefghijklmnopq\x"`,
	`"` + strings.Repeat("x", 63) + `"`, `"` + strings.Repeat("\\\\", 9) + `"`, "\"" + strings.Repeat("ab", 20) + "\x00\"",
}

func TestScanStringAgreesWithReference(t *testing.T) {
	for _, s := range scanStringSeeds {
		checkScanString(t, []byte(s))
		checkScanString(t, []byte(s+`,"next":1}`))
	}
	// Every byte value at every offset of an eight-byte word.
	for c := 0; c < 256; c++ {
		for at := 1; at <= 17; at++ {
			b := []byte(`"` + strings.Repeat("k", 24) + `"`)
			b[at] = byte(c)
			checkScanString(t, b)
		}
	}
}

func FuzzScanString(f *testing.F) {
	for _, s := range scanStringSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkScanString(t, append([]byte{'"'}, b...))
	})
}

func checkScanString(t *testing.T, b []byte) {
	t.Helper()
	end, esc, err := scanString(b, 0)
	rend, resc, rerr := scanStringRef(b, 0)
	if end != rend || esc != resc || (err == nil) != (rerr == nil) {
		t.Fatalf("scanString(%q) = %d, %v, %v; the reference says %d, %v, %v", b, end, esc, err, rend, resc, rerr)
	}
}

// BenchmarkScanString scans a 360-byte string without escapes, as a
// tool call's arguments often hold: every parse and digest pays it.
func BenchmarkScanString(b *testing.B) {
	s := []byte(`"` + strings.Repeat("lorem ipsum ", 30) + `"`)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		if end, _, err := scanString(s, 0); err != nil || end != len(s) {
			b.Fatal(end, err)
		}
	}
}

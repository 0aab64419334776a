package mcpmsg

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

func TestCanonical(t *testing.T) {
	tests := []struct {
		in, want string
		err      error
	}{
		{`{ "b" : 1, "a" : [ 2 , {"d":null,"c":true} ] }`, `{"a":[2,{"c":true,"d":null}],"b":1}`, nil},
		{`1.50e+3`, `1.50e+3`, nil}, // numbers as written
		{`"\u0041\/<"`, `"A/\u003c"`, nil},
		{`{"a":1,"a":2}`, `{"a":1,"a":2}`, nil}, // a repeated key kept
		{`"\ud83d\ude00"`, `"😀"`, nil},
		{`{"\u00e9":1,"z":2}`, `{"z":2,"é":1}`, nil},
		{`[]`, `[]`, nil},
		{"\"a\u2028b\u2029c\\\"\"", `"a\u2028b\u2029c\""`, nil}, // U+2028, U+2029 escaped
		{`"\ud83d"`, ``, ErrNoCanonical},
		{`"\ude00x"`, ``, ErrNoCanonical},
		{"\"\xff\"", ``, ErrNoCanonical},
		{`{"a":1}x`, ``, errSyntax},
		{``, ``, errSyntax},
	}
	for _, tt := range tests {
		got, err := Canonical([]byte(tt.in))
		if !errors.Is(err, tt.err) || string(got) != tt.want {
			t.Errorf("Canonical(%q) = %q, %v; want %q, %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestRequestDigest(t *testing.T) {
	base := RequestDigest([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi","n":1}}}`))
	same := []string{
		`{"id":2,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"n":1,"text":"hi"},"name":"echo"}}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"echo","_meta":{"progressToken":7},"arguments":{"text":"h\u0069","n":1}}}`,
	}
	for _, s := range same {
		if got := RequestDigest([]byte(s)); got != base {
			t.Errorf("RequestDigest(%s) differs from the same call's", s)
		}
	}
	other := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"ho","n":1}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{"text":"hi","n":1}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"echo","arguments":{"text":"hi","n":1}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi","n":1.0}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi","n":1},"task":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`,
	}
	for _, s := range other {
		if got := RequestDigest([]byte(s)); got == base {
			t.Errorf("RequestDigest(%s) is another call's", s)
		}
	}
	a := RequestDigest([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\ud800"}}`))
	b := RequestDigest([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\ud801"}}`))
	if a == b {
		t.Error("two lone surrogates share a digest")
	}
}

// FuzzCanonical: what Canonical spells is valid JSON, the same value as its
// input, its own spelling, the same for the input re-indented, and where
// encoding/json has one spelling (no repeated keys), that one.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{`{"b":[1,{"y":"\u00e9","x":-0.5e1}],"a":null}`, `"\ud83d\ude00<&>"`, `[]`, `{"a":1,"a":2}`, `"\ud800"`, `{"":{"":[true,false]}}`, "\"a\u2028b\u2029\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		out, err := Canonical(raw)
		if err != nil {
			if json.Valid(raw) && !errors.Is(err, ErrNoCanonical) {
				t.Fatalf("Canonical(%q) refused valid JSON: %v", raw, err)
			}
			return
		}
		if !json.Valid(raw) {
			t.Fatalf("Canonical accepted invalid JSON %q", raw)
		}
		if !reflect.DeepEqual(decodeAny(t, raw), decodeAny(t, out)) {
			t.Fatalf("Canonical(%q) = %q, another value", raw, out)
		}
		if again, err := Canonical(out); err != nil || !bytes.Equal(again, out) {
			t.Fatalf("Canonical(%q) = %q, then %q, %v", raw, out, again, err)
		}
		var indented bytes.Buffer
		if json.Indent(&indented, raw, " ", "\t") == nil {
			if spaced, err := Canonical(indented.Bytes()); err != nil || !bytes.Equal(spaced, out) {
				t.Fatalf("Canonical(%q) = %q, but re-indented %q, %v", raw, out, spaced, err)
			}
		}
		std, err := json.Marshal(decodeAny(t, raw))
		if err != nil {
			return
		}
		if own, err := Canonical(std); err != nil || !bytes.Equal(own, std) {
			t.Fatalf("encoding/json spells %q as %q, Canonical as %q, %v", raw, std, own, err)
		}
	})
}

func decodeAny(t *testing.T, raw []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decoding %q: %v", raw, err)
	}
	return v
}

// TestRequestDigestStable pins digests: gateways of two versions share
// idempotency records through the store during a rolling deploy, so a
// change of spelling would make one's retry look like another call to
// the other (key_reused).
func TestRequestDigestStable(t *testing.T) {
	for body, want := range map[string]string{
		`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"search","arguments":{"query":"lorem <b> & \u2028 \"q\" é","limit":10,"z":[1,{"b":2,"a":"x\\y"}],"filters":{"lang":["en","fr"],"since":"2026-01-01"}},"_meta":{"progressToken":"p-1"}}}`: "7fab36c6e8fca7a9633a39c05311ebb7ca0e7f1efb34eec41fb8704bbc44cb99",
		`{"method":"tools/call"}`: "7180c0af90cc6d1f9ba8c27a3644618d81288e7ec8b279758927186224008853",
		`{"method":"tools/call","params":{"b\u0041":1,"bA":2,"a":null}}`: "b199d4ab163c33e24d36869956d9152f0adc1e889dbc7e4bd5bfa86cdb1b5060",
		`{"method":"x","params":{"s":"\ud800"}}`:                         "9acd797f7449374e21e7f85f0b1b53263b07e983b5c3bdddcd9857f615f170cd",
		`{"method":"x","params":[1, 2 ,{"k":"v"}]}`:                      "daeac281ad0b1409bcc8fb25e0138ab95f60a1171363d208a4bc5b37e01a396d",
	} {
		if got := RequestDigest([]byte(body)); got != want {
			t.Errorf("RequestDigest(%s) = %s, want %s", body, got, want)
		}
	}
}

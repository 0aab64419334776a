package identity

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBearerJWT(t *testing.T) {
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	b64 := base64.RawURLEncoding.EncodeToString
	good := makeJWT(t, map[string]any{"iss": "i", "sub": "s"}, "sig")
	h, p, _ := strings.Cut(good, ".")
	p, sig, _ := strings.Cut(p, ".")
	tests := []struct {
		name, tok string
		want      string // "" means the token is opaque
	}{
		{"plain", good, "1:is"},
		{"empty signature", h + "." + p + ".", "1:is"},
		{"whitespace in payload", makeJWT(t, raw(` { "sub" : "s" ,"iss":"i" } `), "x"), "1:is"},
		{"escaped key", makeJWT(t, raw(`{"\u0069ss":"i","sub":"s"}`), "x"), "1:is"},
		{"escaped value", makeJWT(t, raw(`{"iss":"a\"b\u00e9","sub":"s"}`), "x"), "5:a\"bés"},
		{"unicode", makeJWT(t, map[string]any{"iss": "ü", "sub": "名前"}, "x"), "2:ü名前"},
		{"last duplicate wins", makeJWT(t, raw(`{"iss":"x","sub":"s","iss":"i"}`), "x"), "1:is"},
		{"nested values skipped", makeJWT(t, raw(`{"a":{"iss":"no","b":[1,"]}",{}]},"iss":"i","c":-1.5e3,"d":true,"sub":"s","e":null}`), "x"), "1:is"},
		{"big payload", makeJWT(t, map[string]any{"iss": "i", "sub": "s", "pad": strings.Repeat("p", 4000)}, "x"), "1:is"},

		{"missing sub", makeJWT(t, map[string]any{"iss": "i"}, "x"), ""},
		{"missing iss", makeJWT(t, map[string]any{"sub": "s"}, "x"), ""},
		{"empty sub", makeJWT(t, map[string]any{"iss": "i", "sub": ""}, "x"), ""},
		{"numeric sub", makeJWT(t, map[string]any{"iss": "i", "sub": 42}, "x"), ""},
		{"null sub", makeJWT(t, raw(`{"iss":"i","sub":null}`), "x"), ""},
		{"last duplicate not a string", makeJWT(t, raw(`{"iss":"i","sub":"s","sub":1}`), "x"), ""},
		{"claims only nested", makeJWT(t, raw(`{"x":{"iss":"i","sub":"s"}}`), "x"), ""},
		{"keys fold no case", makeJWT(t, raw(`{"ISS":"i","Sub":"s"}`), "x"), ""},
		{"payload an array", makeJWT(t, raw(`["iss","i","sub","s"]`), "x"), ""},
		{"payload not json", makeJWT(t, raw(`{"iss":"i","sub":"s"`), "x"), ""},
		{"payload not base64", h + ".%%%." + sig, ""},
		{"padded payload", h + "." + b64([]byte(`{"iss":"i","sub":"ss"}`)) + "==." + sig, ""},
		{"impossible length", h + "." + p + "A." + sig, ""},
		{"two segments", h + "." + p, ""},
		{"four segments", good + ".x", ""},
		{"empty header", "." + p + "." + sig, ""},
		{"empty payload", h + ".." + sig, ""},
		{"no dots", "abc", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := "jwt " + tt.want
			if tt.want == "" {
				want = "token bearer " + tt.tok
			}
			id, ok := FromCredential("Bearer "+tt.tok, "")
			if !ok {
				t.Fatal("no identity")
			}
			if diff := cmp.Diff(want, describe(id)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// claimsByDecode is what a full decode says the issuer and subject are.
func claimsByDecode(payload []byte) (iss, sub string, ok bool) {
	var m map[string]any // a map matches keys exactly, as RFC 7519 does
	if json.Unmarshal(payload, &m) != nil {
		return "", "", false
	}
	iss, ok1 := m["iss"].(string)
	sub, ok2 := m["sub"].(string)
	return iss, sub, ok1 && ok2 && iss != "" && sub != ""
}

// claimsByScan is what fromJWT's scanner says, from a valid payload.
func claimsByScan(payload []byte) (iss, sub string, ok bool) {
	if !json.Valid(payload) {
		return "", "", false
	}
	issRaw, subRaw := issuerSubject(payload)
	i, ok1 := jsonString(issRaw)
	s, ok2 := jsonString(subRaw)
	return string(i), string(s), ok1 && ok2 && len(i) > 0 && len(s) > 0
}

func TestIssuerSubjectMatchesDecode(t *testing.T) {
	for _, payload := range jwtPayloadSeeds {
		t.Run(payload, func(t *testing.T) {
			checkClaims(t, []byte(payload))
		})
	}
}

// checkClaims compares the scanner with encoding/json on one payload.
func checkClaims(t *testing.T, payload []byte) {
	t.Helper()
	type claims struct {
		Iss, Sub string
		OK       bool
	}
	var want, got claims
	want.Iss, want.Sub, want.OK = claimsByDecode(payload)
	got.Iss, got.Sub, got.OK = claimsByScan(payload)
	if !want.OK {
		want = claims{}
	}
	if !got.OK {
		got = claims{}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("claims of %q (-decode +scan):\n%s", payload, diff)
	}
}

// jwtPayloadSeeds are payloads for the scanner tests and its fuzz target.
var jwtPayloadSeeds = []string{
	`{"iss":"i","sub":"s"}`,
	` {"sub" : "s", "iss" : "i"} `,
	`{"iss":"i","sub":"s","iss":"j"}`,
	`{"iss":"i","sub":"s","sub":1}`,
	`{"\u0069ss":"i","s\u0075b":"\ud83d\ude00"}`,
	`{"iss":"a\\b\"c","sub":"\n"}`,
	`{"a":[{"iss":"x"},"]",{"}":"{"}],"iss":"i","b":{"c":{"sub":"x"}},"sub":"s"}`,
	"{\"iss\":\"\xff\xfe\",\"sub\":\"s\"}",
	`{"iss":1e3,"sub":"s"}`,
	`{"iss":"i"}`,
	`{}`,
	`[]`,
	`"iss"`,
	`{"iss":"i","sub":"s"`,
	`{"ISS":"i","SUB":"s"}`,
}

package identity

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// describe spells out an identity's fields for a test to compare; the
// identity itself only ever prints "[redacted]".
func describe(id Identity) string {
	switch id.kind {
	case KindToken:
		return fmt.Sprintf("token %s %s", id.scheme, id.value)
	case KindJWT:
		return "jwt " + id.value
	case KindAddress:
		return "address " + id.addr.String()
	}
	if !id.IsZero() {
		return fmt.Sprintf("corrupt %d %q %q %v", id.kind, id.scheme, id.value, id.addr)
	}
	return "none"
}

// makeJWT builds an unsigned-looking JWS compact serialisation of claims;
// sig stands in for the signature bytes.
func makeJWT(t testing.TB, claims any, sig string) string {
	t.Helper()
	seg := func(v any) string {
		if raw, ok := v.(json.RawMessage); ok { // verbatim, even if invalid
			return base64.RawURLEncoding.EncodeToString(raw)
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("encoding JWT segment: %v", err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return seg(map[string]string{"alg": "RS256", "typ": "JWT"}) + "." + seg(claims) + "." +
		base64.RawURLEncoding.EncodeToString([]byte(sig))
}

func TestFromCredentialForms(t *testing.T) {
	jwt := makeJWT(t, map[string]any{"iss": "https://auth.example", "sub": "user-42", "exp": 1}, "sig")
	long := strings.Repeat("x", MaxCredentialLen)
	tests := []struct {
		name, auth, priv string
		want             string
	}{
		{"nothing", "", "", "none"},
		{"blank", " \t ", "  ", "none"},
		{"bearer", "Bearer abc", "", "token bearer abc"},
		{"bearer lower", "bearer abc", "", "token bearer abc"},
		{"bearer upper with tab", "BEARER\tabc", "", "token bearer abc"},
		{"bearer padded", "  Bearer   abc  ", "", "token bearer abc"},
		{"bearer inner whitespace collapsed", "Bearer a \t b", "", "token bearer a b"},
		{"token case kept", "Bearer AbC", "", "token bearer AbC"},
		{"basic not decoded", "Basic dXNlcjpwYXNz", "", "token basic dXNlcjpwYXNz"},
		{"basic upper", "BASIC dXNlcjpwYXNz", "", "token basic dXNlcjpwYXNz"},
		{"gitlab token scheme", "Token glpat-123", "", "token token glpat-123"},
		{"unknown scheme lowered", "X-Custom-Scheme k=v", "", "token x-custom-scheme k=v"},
		{"auth params collapsed", `Digest  username="u",   realm="r"`, "", `token digest username="u", realm="r"`},
		{"private token", "", "abc", "token bearer abc"},
		{"private token padded", "", " abc\t", "token bearer abc"},
		{"authorization wins", "Bearer abc", "def", "token bearer abc"},
		{"bare scheme yields to private token", "Bearer", "def", "token bearer def"},
		{"bare scheme alone", "Bearer  ", "", "none"},
		{"lone word is a bare scheme", "abc", "", "none"},
		{"blank authorization yields", "   ", "def", "token bearer def"},
		{"jwt", "Bearer " + jwt, "", "jwt 20:https://auth.exampleuser-42"},
		{"jwt as private token", "", jwt, "jwt 20:https://auth.exampleuser-42"},
		{"jwt under basic is opaque", "Basic " + jwt, "", "token basic " + jwt},
		{"longest credential", "", long, "token bearer " + long},
		{"oversized authorization yields", "Bearer " + long, "def", "token bearer def"},
		{"oversized private token", "", long + "x", "none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, ok := FromCredential(tt.auth, tt.priv)
			if ok == id.IsZero() {
				t.Errorf("ok = %v with a zero identity = %v", ok, id.IsZero())
			}
			if diff := cmp.Diff(tt.want, describe(id)); diff != "" {
				t.Errorf("FromCredential(%q, %q) (-want +got):\n%s", tt.auth, tt.priv, diff)
			}
		})
	}
}

// TestFromCredentialEquivalence checks which spellings are one identity:
// every member of a class is equal, and no two classes are.
func TestFromCredentialEquivalence(t *testing.T) {
	claims := func(extra map[string]any) map[string]any {
		c := map[string]any{"iss": "https://auth.example", "sub": "user-42"}
		for k, v := range extra {
			c[k] = v
		}
		return c
	}
	jwtA := makeJWT(t, claims(map[string]any{"exp": 1000, "iat": 900}), "first signature")
	jwtB := makeJWT(t, claims(map[string]any{"exp": 5000, "iat": 4900, "scope": "read"}), "refreshed")
	type cred struct{ auth, priv string }
	classes := map[string][]cred{
		"opaque abc": {
			{"Bearer abc", ""}, {"bearer abc", ""}, {"BEARER\tabc", ""}, {"Bearer  abc ", ""},
			{"", "abc"}, {"", " abc "}, {"Bearer abc", "other"}, {"Bearer", "abc"},
		},
		"opaque ABC": {{"Bearer ABC", ""}},
		"basic abc":  {{"Basic abc", ""}, {"basic  abc", ""}, {" BASIC abc\t", ""}},
		"token abc":  {{"token abc", ""}, {"Token abc", ""}},
		"user-42":    {{"Bearer " + jwtA, ""}, {"Bearer " + jwtB, ""}, {"", jwtB}},
		"user-43": {
			{"Bearer " + makeJWT(t, map[string]any{"iss": "https://auth.example", "sub": "user-43"}, "s"), ""},
		},
		"other issuer": {
			{"Bearer " + makeJWT(t, map[string]any{"iss": "https://other.example", "sub": "user-42"}, "s"), ""},
		},
		// The length prefix keeps iss "ab"+sub "c" apart from "a"+"bc".
		"ab c": {{"Bearer " + makeJWT(t, map[string]any{"iss": "ab", "sub": "c"}, "s"), ""}},
		"a bc": {{"Bearer " + makeJWT(t, map[string]any{"iss": "a", "sub": "bc"}, "s"), ""}},
	}
	first := map[string]Identity{}
	for name, creds := range classes {
		for _, c := range creds {
			id, ok := FromCredential(c.auth, c.priv)
			if !ok {
				t.Fatalf("%s: FromCredential(%q, %q) found no credential", name, c.auth, c.priv)
			}
			if prev, seen := first[name]; seen && id != prev {
				t.Errorf("%s: FromCredential(%q, %q) = %s, want %s", name, c.auth, c.priv, describe(id), describe(prev))
			}
			first[name] = id
		}
	}
	for a, ida := range first {
		for b, idb := range first {
			if a < b && ida == idb {
				t.Errorf("classes %q and %q share the identity %s", a, b, describe(ida))
			}
		}
	}
}

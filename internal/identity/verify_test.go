package identity

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// testKeys are one key of each accepted algorithm, with their kids.
type testKey struct {
	kid string
	alg jose.SignatureAlgorithm
	key crypto.Signer
}

func newTestKeys(t testing.TB) []testKey {
	t.Helper()
	r, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	e, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	_, d, _ := ed25519.GenerateKey(rand.Reader)
	return []testKey{{"rsa", jose.RS256, r}, {"ec", jose.ES256, e}, {"ed", jose.EdDSA, d}}
}

// jwksOf is the public JWKS of keys.
func jwksOf(t testing.TB, keys []testKey) []byte {
	t.Helper()
	var set jose.JSONWebKeySet
	for _, k := range keys {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k.key.Public(), KeyID: k.kid, Algorithm: string(k.alg), Use: "sig"})
	}
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sign makes a token with k.
func sign(t testing.TB, k testKey, c jwt.Claims) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: k.alg, Key: k.key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", k.kid))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(c).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestVerify(t *testing.T) {
	f := newVerifyFixture(t, VerifyOptions{})
	v, keys, now, good := f.v, f.keys, f.now, f.good
	other := newTestKeys(t)
	with := func(f func(*jwt.Claims)) jwt.Claims { c := good; f(&c); return c }
	for _, k := range keys {
		got, err := v.Verify("Bearer "+sign(t, k, good), now)
		if err != nil || got.Issuer != "https://idp" || got.Subject != "alice" || got.Claims != nil {
			t.Fatalf("%s: %+v, %v", k.alg, got, err)
		}
	}
	bad := []struct {
		name string
		tok  string
	}{
		{"expired", sign(t, keys[0], with(func(c *jwt.Claims) { c.Expiry = jwt.NewNumericDate(now.Add(-time.Minute)) }))},
		{"no exp", sign(t, keys[1], with(func(c *jwt.Claims) { c.Expiry = nil }))},
		{"not yet valid", sign(t, keys[2], with(func(c *jwt.Claims) { c.NotBefore = jwt.NewNumericDate(now.Add(time.Hour)) }))},
		{"wrongly signed", sign(t, other[0], good)},
		{"another key's kid", sign(t, testKey{kid: "rsa", alg: jose.RS256, key: other[0].key}, good)},
		{"wrong issuer", sign(t, keys[0], with(func(c *jwt.Claims) { c.Issuer = "https://evil" }))},
		{"wrong audience", sign(t, keys[0], with(func(c *jwt.Claims) { c.Audience = jwt.Audience{"https://other"} }))},
		{"no subject", sign(t, keys[0], with(func(c *jwt.Claims) { c.Subject = "" }))},
		{"unsigned", "eyJhbGciOiJub25lIn0.eyJpc3MiOiJodHRwczovL2lkcCIsInN1YiI6ImFsaWNlIn0."},
		{"garbage", "not.a.jwt"},
	}
	for _, tt := range bad {
		if got, err := v.Verify("Bearer "+tt.tok, now); !errors.Is(err, ErrBadToken) {
			t.Errorf("%s: %+v, %v; want ErrBadToken", tt.name, got, err)
		}
	}
	for _, h := range []string{"", "Bearer", "Basic dXNlcjpwYXNz"} {
		if _, err := v.Verify(h, now); !errors.Is(err, ErrNoToken) {
			t.Errorf("%q: %v, want ErrNoToken", h, err)
		}
	}
	// Within the clock skew an expired token still passes.
	late := sign(t, keys[0], with(func(c *jwt.Claims) { c.Expiry = jwt.NewNumericDate(now.Add(-10 * time.Second)) }))
	if _, err := v.Verify("Bearer "+late, now); err != nil {
		t.Errorf("10 s past exp, within the 30 s skew: %v", err)
	}
	// A refreshed token is the same identity.
	a, _ := v.Verify("Bearer "+sign(t, keys[0], good), now)
	b, err := v.Verify("Bearer "+sign(t, keys[1], with(func(c *jwt.Claims) { c.ID = "second"; c.Expiry = jwt.NewNumericDate(now.Add(2 * time.Hour)) })), now)
	if err != nil || a.Identity() != b.Identity() {
		t.Error("a refreshed token changed the identity")
	}
}

func TestVerifyKeepsClaims(t *testing.T) {
	keys := newTestKeys(t)
	v, err := NewVerifier(VerifyOptions{Issuers: []string{"https://idp"}, AudiencesAny: true, KeepClaims: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.SetKeys(jwksOf(t, keys)); err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: keys[0].alg, Key: keys[0].key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", keys[0].kid))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(jwt.Claims{Issuer: "https://idp", Subject: "alice",
		Expiry: jwt.NewNumericDate(now.Add(time.Hour))}).Claims(map[string]any{"scope": "mcp:read", "groups": []string{"oncall"}}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	got, err := v.Verify("Bearer "+tok, now)
	if err != nil {
		t.Fatal(err)
	}
	if got.Claims["scope"] != "mcp:read" || got.Claims["sub"] != "alice" || len(got.Claims["groups"].([]any)) != 1 {
		t.Errorf("claims %v", got.Claims)
	}
}

func TestSetKeysRefusesWhatIsNoKeySet(t *testing.T) {
	v, _ := NewVerifier(VerifyOptions{Issuers: []string{"i"}, AudiencesAny: true})
	priv := newTestKeys(t)[1]
	set, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: priv.key, KeyID: "x"}}})
	for _, b := range [][]byte{[]byte("{"), []byte(`{"keys":[]}`), set} {
		if err := v.SetKeys(b); err == nil {
			t.Errorf("SetKeys(%.40s) accepted", b)
		}
	}
	if _, err := NewVerifier(VerifyOptions{}); err == nil {
		t.Error("a verifier without issuers")
	}
}

// FuzzVerify: whatever the header, Verify answers without a panic, and
// nothing but a token signed by the set verifies.
func FuzzVerify(f *testing.F) {
	keys := newTestKeys(f)
	v, _ := NewVerifier(VerifyOptions{Issuers: []string{"https://idp"}, AudiencesAny: true})
	if err := v.SetKeys(jwksOf(f, keys)); err != nil {
		f.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	good := sign(f, keys[0], jwt.Claims{Issuer: "https://idp", Subject: "a", Expiry: jwt.NewNumericDate(now.Add(time.Hour))})
	f.Add("Bearer " + good)
	f.Add("Bearer eyJhbGciOiJub25lIn0.e30.")
	f.Add("bearer  a.b.c")
	f.Fuzz(func(t *testing.T, h string) {
		got, err := v.Verify(h, now)
		if err == nil && (got.Subject == "" || got.Issuer != "https://idp") {
			t.Fatalf("verified %+v", got)
		}
	})
}

// TestVerifyNoSkew: a negative ClockSkew is no leeway (auth.clock_skew:
// 0s), where 0 is the default's 30 s.
func TestVerifyNoSkew(t *testing.T) {
	f := newVerifyFixture(t, VerifyOptions{ClockSkew: -1})
	late := f.good
	late.Expiry = jwt.NewNumericDate(f.now.Add(-time.Second))
	if _, err := f.v.Verify("Bearer "+sign(t, f.keys[1], late), f.now); !errors.Is(err, ErrBadToken) {
		t.Errorf("1 s past exp with no leeway: %v, want ErrBadToken", err)
	}
	d := newVerifyFixture(t, VerifyOptions{})
	if _, err := d.v.Verify("Bearer "+sign(t, d.keys[1], late), d.now); err != nil {
		t.Errorf("1 s past exp with the default leeway: %v", err)
	}
}

package identity

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"
)

// TestVerifierWantsAnAudience: a verifier that would take a token minted
// for any resource is refused unless asked for on purpose; asked for, it
// takes any aud.
func TestVerifierWantsAnAudience(t *testing.T) {
	_, err := NewVerifier(VerifyOptions{Issuers: []string{"https://idp"}})
	if !errors.Is(err, ErrNoAudience) || !strings.Contains(err.Error(), "RFC 8707") {
		t.Fatalf("NewVerifier without audiences: %v, want ErrNoAudience citing RFC 8707", err)
	}
	keys := newTestKeys(t)
	v, err := NewVerifier(VerifyOptions{Issuers: []string{"https://idp"}, AudiencesAny: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.SetKeys(jwksOf(t, keys)); err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	tok := sign(t, keys[0], jwt.Claims{Issuer: "https://idp", Subject: "a", Audience: jwt.Audience{"https://elsewhere"},
		Expiry: jwt.NewNumericDate(now.Add(time.Hour))})
	if _, err := v.Verify("Bearer "+tok, now); err != nil {
		t.Errorf("AudiencesAny refused another resource's token: %v", err)
	}
}

// TestMaxLifetime: a token valid for longer than the bound is refused,
// measured from iat, or from now without iat.
func TestMaxLifetime(t *testing.T) {
	keys := newTestKeys(t)
	now := time.Unix(1_800_000_000, 0)
	year := 365 * 24 * time.Hour
	tests := []struct {
		name     string
		max      time.Duration
		iat      time.Duration // from now; 1 means no iat
		exp      time.Duration // from now
		accepted bool
	}{
		{"100 years under the default", 0, 0, 100 * year, false},
		{"a day under the default", 0, 0, 24 * time.Hour, true},
		{"a day and a minute under the default", 0, 0, 24*time.Hour + time.Minute, false},
		{"issued 20 h ago for 25 h", 0, -20 * time.Hour, 5 * time.Hour, false},
		{"no iat, 23 h left", 0, 1, 23 * time.Hour, true},
		{"no iat, 25 h left", 0, 1, 25 * time.Hour, false},
		{"no iat, a day and the skew left", 0, 1, 24*time.Hour + 20*time.Second, true},
		{"100 years, no bound", -1, 0, 100 * year, true},
		{"2 h over a 1 h bound", time.Hour, 0, 2 * time.Hour, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := NewVerifier(VerifyOptions{Issuers: []string{"https://idp"}, Audiences: []string{"mcp"}, MaxLifetime: tt.max})
			if err != nil {
				t.Fatal(err)
			}
			if err := v.SetKeys(jwksOf(t, keys)); err != nil {
				t.Fatal(err)
			}
			c := jwt.Claims{Issuer: "https://idp", Subject: "a", Audience: jwt.Audience{"mcp"}, Expiry: jwt.NewNumericDate(now.Add(tt.exp))}
			if tt.iat != 1 {
				c.IssuedAt = jwt.NewNumericDate(now.Add(tt.iat))
			}
			_, err = v.Verify("Bearer "+sign(t, keys[1], c), now)
			if tt.accepted && err != nil {
				t.Errorf("refused: %v", err)
			}
			if !tt.accepted && (!errors.Is(err, ErrBadToken) || !strings.Contains(err.Error(), "longer than")) {
				t.Errorf("got %v, want a refusal for its lifetime", err)
			}
		})
	}
}

// TestCheckKeyURL: keys come over https, or in the clear only from
// loopback; a refused URL's error keeps its password to itself.
func TestCheckKeyURL(t *testing.T) {
	for _, tt := range []struct {
		url string
		ok  bool
	}{
		{"https://idp.example.com/.well-known/jwks.json", true},
		{"https://10.0.0.1/jwks", true},
		{"http://127.0.0.1:8080/jwks", true},
		{"http://127.9.9.9/jwks", true},
		{"http://localhost/jwks", true},
		{"http://LOCALHOST:1/jwks", true},
		{"http://[::1]:8080/jwks", true},
		{"http://example/jwks", false},
		{"http://example.com/jwks", false},
		{"http://10.0.0.1/jwks", false},
		{"http://127.0.0.1.nip.io/jwks", false},
		{"http://localhost.example.com/jwks", false},
		{"ftp://127.0.0.1/jwks", false},
		{"https:///jwks", false},
		{"/jwks", false},
		{"http://user:hunter2@example.com/jwks", false},
		{"http://user:hunter2@exa mple.com/jwks", false},
	} {
		err := CheckKeyURL(tt.url)
		if (err == nil) != tt.ok {
			t.Errorf("CheckKeyURL(%q) = %v, want ok %v", tt.url, err, tt.ok)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("CheckKeyURL(%q): the error quotes the password: %v", tt.url, err)
		}
	}
	for _, tt := range []struct {
		to string
		ok bool
	}{{"https://idp.example.com/jwks", true}, {"http://idp.example.com/jwks", false}, {"http://127.0.0.1/jwks", true}} {
		req, _ := http.NewRequest(http.MethodGet, tt.to, nil)
		if err := keyRedirect(req, nil); (err == nil) != tt.ok {
			t.Errorf("a redirect to %s: %v, want ok %v", tt.to, err, tt.ok)
		}
	}
}

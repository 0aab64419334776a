package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"
)

// TestServeVerifiesTokens: `serve` with auth.jwks_file refuses a request
// without a valid token (401 and a challenge) and serves a valid one; a key
// file that does not load stops it from starting.
func TestServeVerifiesTokens(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	jwks, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &k.PublicKey, KeyID: "k", Algorithm: "ES256"}}})
	dir := t.TempDir()
	keys := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(keys, jwks, 0o600); err != nil {
		t.Fatal(err)
	}
	_, ups := limitsFleet(t)
	gws, _ := startGateways(t, 1, ups+"auth: {jwks_file: '"+keys+"', issuers: ['https://idp'], audiences: [mcp]}\n")
	if a, err := tryCall(gws[0], "not-a-jwt", 0); err != nil || a.status != 401 {
		t.Fatalf("an opaque token: %+v %v, want 401", a, err)
	}
	s, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: k}, (&jose.SignerOptions{}).WithHeader("kid", "k"))
	tok, _ := josejwt.Signed(s).Claims(josejwt.Claims{Issuer: "https://idp", Subject: "alice", Audience: josejwt.Audience{"mcp"},
		Expiry: josejwt.NewNumericDate(time.Now().Add(time.Hour))}).Serialize()
	if a, err := tryCall(gws[0], tok, 0); err != nil || a.status != 200 {
		t.Fatalf("a valid token: %+v %v", a, err)
	}
	// No keys, no start.
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("listen: 127.0.0.1:0\n"+ups+"auth: {jwks_file: '"+filepath.Join(dir, "missing.json")+"', issuers: [i]}\n"), 0o600)
	code, _, stderr := runCmd(t, t.Context(), "serve", "--config", bad)
	if code != 2 || !strings.Contains(stderr, "auth") {
		t.Fatalf("serve with a missing key file: exit %d, %s", code, stderr)
	}
}

package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testproc"

	"github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"
)

// TestServeVerifiesTokens: `serve` with auth.jwks_file refuses a request
// without a valid token (401 and a challenge), or with one valid for a
// century, and serves a valid one; a key file that does not load, or no
// audience, stops it from starting.
func TestServeVerifiesTokens(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	k, keys := writeJWKS(t)
	dir := filepath.Dir(keys)
	_, ups := limitsFleet(t)
	gws, _ := startGateways(t, 1, ups+"auth: {jwks_file: '"+keys+"', issuers: ['https://idp'], audiences: [mcp]}\n")
	if a, err := tryCall(gws[0], "not-a-jwt", 0); err != nil || a.status != 401 {
		t.Fatalf("an opaque token: %+v %v, want 401", a, err)
	}
	tok := signToken(k, "mcp")
	if a, err := tryCall(gws[0], tok, 0); err != nil || a.status != 200 {
		t.Fatalf("a valid token: %+v %v", a, err)
	}
	century := signTokenFor(k, "mcp", 100*365*24*time.Hour)
	if a, err := tryCall(gws[0], century, 0); err != nil || a.status != 401 {
		t.Fatalf("a token valid for 100 years: %+v %v, want 401 under the default auth.max_token_lifetime", a, err)
	}
	// No keys, no start.
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("listen: 127.0.0.1:0\n"+ups+"auth: {jwks_file: '"+filepath.Join(dir, "missing.json")+"', issuers: [i], audiences: [mcp]}\n"), 0o600)
	code, _, stderr := runCmd(t, t.Context(), "serve", "--config", bad)
	if code != 2 || !strings.Contains(stderr, "jwks") {
		t.Fatalf("serve with a missing key file: exit %d, %s", code, stderr)
	}
	// No audience, no start: every other resource's token would do.
	os.WriteFile(bad, []byte("listen: 127.0.0.1:0\n"+ups+"auth: {jwks_file: '"+keys+"', issuers: [i]}\n"), 0o600)
	code, _, stderr = runCmd(t, t.Context(), "serve", "--config", bad)
	if code != 2 || !strings.Contains(stderr, "auth.audiences") || !strings.Contains(stderr, "RFC 8707") {
		t.Fatalf("serve without an audience: exit %d, %s", code, stderr)
	}
}

// TestServicesVerifyTheirOwnAudience: two services with the same keys and
// issuer but their own auth.audiences: a token for github's audience is
// served at github and refused at jira, whose challenge names jira's own
// protected-resource document.
func TestServicesVerifyTheirOwnAudience(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	k, keys := writeJWKS(t)
	dir := filepath.Dir(keys)
	gh, jira := testproc.FreeAddr(t), testproc.FreeAddr(t)
	startReplica(t, "github-1", gh)
	startReplica(t, "jira-1", jira)
	gw := testproc.FreeAddr(t)
	cfg := filepath.Join(dir, "services.yaml")
	os.WriteFile(cfg, []byte("listen: "+gw+"\nauth: {jwks_file: '"+keys+"', issuers: ['https://idp']}\nservices:\n"+
		"  - {name: github, path: /github/mcp, auth: {audiences: [github]}, upstreams: [{url: 'http://"+gh+"/mcp'}]}\n"+
		"  - {name: jira, path: /jira/mcp, auth: {audiences: [jira]}, upstreams: [{url: 'http://"+jira+"/mcp'}]}\n"), 0o600)
	startProcess(t, "serve", "--config", cfg)
	testproc.WaitReady(t, "http://"+gw+"/readyz")
	tok := signToken(k, "github")
	call := func(path string) *http.Response {
		t.Helper()
		resp, err := post2026(gw+path, "tools/call", "whoami", `"name":"whoami","arguments":{}`, 1, map[string]string{"Authorization": "Bearer " + tok})
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	if resp := call("/github/mcp"); resp.StatusCode != http.StatusOK {
		t.Errorf("github's token at github: %d", resp.StatusCode)
	}
	resp := call("/jira/mcp")
	challenge := resp.Header.Get("WWW-Authenticate")
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(challenge, `resource_metadata="http://`+gw+`/.well-known/oauth-protected-resource/jira/mcp"`) {
		t.Errorf("github's token at jira: %d, challenge %q; want 401 naming jira's document", resp.StatusCode, challenge)
	}
}

// writeJWKS makes an ES256 key and writes its public half as a JWKS file
// (key ID "k") in a temporary directory.
func writeJWKS(t *testing.T) (*ecdsa.PrivateKey, string) {
	t.Helper()
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	jwks, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &k.PublicKey, KeyID: "k", Algorithm: "ES256"}}})
	keys := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(keys, jwks, 0o600); err != nil {
		t.Fatal(err)
	}
	return k, keys
}

// signToken is alice's token from https://idp for audience, an hour long.
func signToken(k *ecdsa.PrivateKey, audience string) string {
	return signTokenFor(k, audience, time.Hour)
}

// signTokenFor is alice's token from https://idp for audience, issued now
// and valid for d.
func signTokenFor(k *ecdsa.PrivateKey, audience string, d time.Duration) string {
	s, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: k}, (&jose.SignerOptions{}).WithHeader("kid", "k"))
	now := time.Now()
	tok, _ := josejwt.Signed(s).Claims(josejwt.Claims{Issuer: "https://idp", Subject: "alice", Audience: josejwt.Audience{audience},
		IssuedAt: josejwt.NewNumericDate(now), Expiry: josejwt.NewNumericDate(now.Add(d))}).Serialize()
	return tok
}

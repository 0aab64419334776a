package gateway

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"
	"github.com/mcpfleet/mcpfleet/internal/identity"
	"github.com/mcpfleet/mcpfleet/internal/testserver"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// issuer signs tokens with an ES256 key and publishes its JWKS.
type issuer struct {
	key  *ecdsa.PrivateKey
	kid  string
	jwks []byte
}

func newIssuer(t testing.TB, kid string) *issuer {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &k.PublicKey, KeyID: kid, Algorithm: "ES256", Use: "sig"}}})
	return &issuer{key: k, kid: kid, jwks: b}
}

func (i *issuer) signer(t testing.TB) jose.Signer {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: i.key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", i.kid))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (i *issuer) token(t testing.TB, c josejwt.Claims) string {
	t.Helper()
	tok, err := josejwt.Signed(i.signer(t)).Claims(c).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestVerifiedTokensOnly: with verification on, expired, wrongly signed,
// wrong-issuer, wrong-audience and missing tokens never reach a replica
// and get a 401 challenge; valid tokens are served, and a refreshed token
// with the same iss and sub keeps its replica.
func TestVerifiedTokensOnly(t *testing.T) {
	idp, rogue := newIssuer(t, "k1"), newIssuer(t, "k1")
	v, err := identity.NewVerifier(identity.VerifyOptions{Issuers: []string{"https://idp"}, Audiences: []string{"mcp"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.SetKeys(idp.jwks); err != nil {
		t.Fatal(err)
	}
	calls := &testserver.Gauge{}
	var specs []upstream.Spec
	for _, name := range []string{"a", "b", "c"} {
		s, _ := testserver.New(name, &testserver.Options{Calls: calls})
		hs := httptest.NewServer(s.Handler())
		t.Cleanup(hs.Close)
		specs = append(specs, upstream.Spec{Name: name, URL: hs.URL + "/mcp"})
	}
	gw := startGatewayOn(t, specs, &Options{Auth: v, RoutingSalt: []byte("shared-salt-0123456789")}, io.Discard)
	front := newFront(gw)
	t.Cleanup(front.Close)
	r := newRaw(t, front.URL+"/mcp", "2026-07-28")

	now := time.Now()
	claims := func(sub string, f func(*josejwt.Claims)) josejwt.Claims {
		c := josejwt.Claims{Issuer: "https://idp", Subject: sub, Audience: josejwt.Audience{"mcp"},
			Expiry: josejwt.NewNumericDate(now.Add(time.Hour)), IssuedAt: josejwt.NewNumericDate(now), ID: fmt.Sprint(now.UnixNano())}
		if f != nil {
			f(&c)
		}
		return c
	}
	call := func(auth string) (int, string, string) {
		hdr := map[string]string{}
		if auth != "" {
			hdr["Authorization"] = auth
		}
		resp := r.post(context.Background(), 1, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}}, hdr)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), string(b)
	}
	refused := map[string]string{
		"missing":        "",
		"expired":        "Bearer " + idp.token(t, claims("alice", func(c *josejwt.Claims) { c.Expiry = josejwt.NewNumericDate(now.Add(-time.Hour)) })),
		"wrongly signed": "Bearer " + rogue.token(t, claims("alice", nil)),
		"wrong issuer":   "Bearer " + idp.token(t, claims("alice", func(c *josejwt.Claims) { c.Issuer = "https://evil" })),
		"wrong audience": "Bearer " + idp.token(t, claims("alice", func(c *josejwt.Claims) { c.Audience = josejwt.Audience{"other"} })),
		"opaque":         "Bearer not-a-jwt",
	}
	for name, auth := range refused {
		code, challenge, body := call(auth)
		if code != 401 || !strings.Contains(challenge, `resource_metadata="http://`+strings.TrimPrefix(front.URL, "http://")+`/.well-known/oauth-protected-resource/mcp"`) {
			t.Fatalf("%s: %d %q %s, want 401 with a resource_metadata challenge", name, code, challenge, body)
		}
		if (name == "missing") == strings.Contains(challenge, "invalid_token") {
			t.Errorf("%s: challenge %q", name, challenge)
		}
	}
	if n := calls.Method("tools/call"); n != 0 {
		t.Fatalf("%d refused calls reached a replica", n)
	}
	replicas := map[string]bool{}
	for range 5 { // each a freshly issued token for alice
		code, _, body := call("Bearer " + idp.token(t, claims("alice", nil)))
		if code != 200 {
			t.Fatalf("a valid token: %d %s", code, body)
		}
		for _, n := range []string{"a", "b", "c"} {
			if strings.Contains(body, `"text":"`+n+`"`) {
				replicas[n] = true
			}
		}
		now = now.Add(time.Millisecond)
	}
	if len(replicas) != 1 {
		t.Fatalf("refreshed tokens of one caller reached %v, want one replica", replicas)
	}
}

// TestVerifiedTokenCached: a token sent again is answered by the
// verified-token cache and counted, with the same caller; a token that
// does not verify is refused every time, cached verifier or not.
func TestVerifiedTokenCached(t *testing.T) {
	idp, rogue := newIssuer(t, "k1"), newIssuer(t, "k1")
	v, err := identity.NewVerifier(identity.VerifyOptions{Issuers: []string{"https://idp"}, Audiences: []string{"mcp"},
		CacheSize: 100, CacheTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.SetKeys(idp.jwks); err != nil {
		t.Fatal(err)
	}
	s, _ := testserver.New("a", nil)
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	gw := startGatewayOn(t, []upstream.Spec{{Name: "a", URL: hs.URL + "/mcp"}}, &Options{Auth: v}, io.Discard)
	front := newFront(gw)
	t.Cleanup(front.Close)
	r := newRaw(t, front.URL+"/mcp", "2026-07-28")
	now := time.Now()
	c := josejwt.Claims{Issuer: "https://idp", Subject: "alice", Audience: josejwt.Audience{"mcp"},
		Expiry: josejwt.NewNumericDate(now.Add(time.Hour)), IssuedAt: josejwt.NewNumericDate(now)}
	call := func(tok string) int {
		resp := r.post(context.Background(), 1, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}},
			map[string]string{"Authorization": "Bearer " + tok})
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	good, forged := idp.token(t, c), rogue.token(t, c)
	for i := range 3 {
		if code := call(good); code != 200 {
			t.Fatalf("call %d with a valid token: %d", i, code)
		}
		if code := call(forged); code != 401 {
			t.Fatalf("call %d with a forged token: %d, want 401", i, code)
		}
	}
	if hits := testutil.ToFloat64(gw.metrics.authCached); hits != 2 {
		t.Errorf("mcpfleet_auth_token_cache_hits_total %v, want 2 (the valid token's second and third calls)", hits)
	}
	if ok := testutil.ToFloat64(gw.metrics.auth.WithLabelValues("ok")); ok != 3 {
		t.Errorf(`mcpfleet_auth_total{outcome="ok"} %v, want 3`, ok)
	}
}

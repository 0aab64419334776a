package main

import (
	"crypto/ecdsa"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"
)

// TestSessionBindingProcess is the session hijack through real gateway
// processes with JWT verification, sharing a secret file: Alice opens a
// 2025-11-25 session through one; Bob's valid token on her session ID
// through the other gets, for a POST, a GET and a DELETE, 404 -32001, and
// none of it reaches a replica; Alice's refreshed token (new jti and exp)
// keeps her session through either; a gateway with session_binding none
// lets Bob in, as before binding.
func TestSessionBindingProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	k, keys := writeJWKS(t)
	calls, ups := limitsFleet(t)
	cfg := ups + "secret_file: " + writeSecret(t) + "\nauth: {jwks_file: '" + keys + "', issuers: ['https://idp'], audiences: [mcp]}\n"
	gws, _ := startGateways(t, 2, cfg)
	open, _ := startGateways(t, 1, cfg+"session_binding: none\n")
	alice, bob := userToken(t, k, "alice"), userToken(t, k, "bob")

	sid := legacyInitialize(t, gws[0], alice)
	for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		status, body := legacyRequest(t, gws[1], method, sid, bob)
		if status != http.StatusNotFound || !strings.Contains(body, `"code":-32001`) {
			t.Errorf("bob's %s on alice's session: %d %s; want 404 -32001", method, status, body)
		}
	}
	if n := calls.Method("tools/call"); n != 0 {
		t.Fatalf("%d of bob's calls reached a replica", n)
	}
	for _, gw := range gws {
		if status, body := legacyRequest(t, gw, http.MethodPost, sid, userToken(t, k, "alice")); status != http.StatusOK {
			t.Fatalf("alice's refreshed token through %s: %d %s", gw, status, body)
		}
	}
	if status, body := legacyRequest(t, open[0], http.MethodPost, sid, bob); status != http.StatusOK {
		t.Errorf("bob through a gateway with session_binding none: %d %s", status, body)
	}
	if n := calls.Method("tools/call"); n != 3 {
		t.Errorf("%d calls reached the replicas, want alice's two and the unbound gateway's one", n)
	}
}

// userToken is a fresh token from https://idp for sub and audience mcp: a
// jti and an expiry of its own each time, as a refresh gives.
func userToken(t *testing.T, k *ecdsa.PrivateKey, sub string) string {
	t.Helper()
	s, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: k}, (&jose.SignerOptions{}).WithHeader("kid", "k"))
	now := time.Now()
	tok, err := josejwt.Signed(s).Claims(josejwt.Claims{Issuer: "https://idp", Subject: sub, Audience: josejwt.Audience{"mcp"},
		ID: fmt.Sprint(now.UnixNano()), IssuedAt: josejwt.NewNumericDate(now),
		Expiry: josejwt.NewNumericDate(now.Add(time.Hour + time.Duration(now.UnixNano()%1000)*time.Second))}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return "Bearer " + tok
}

// legacyInitialize opens a 2025-11-25 session through gw with authz and
// returns its sealed ID.
func legacyInitialize(t *testing.T, gw, authz string) string {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	resp := legacyDo(t, gw, http.MethodPost, "", authz, body)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize through %s: %d, session %q", gw, resp.StatusCode, sid)
	}
	resp = legacyDo(t, gw, http.MethodPost, sid, authz, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return sid
}

// legacyRequest sends a tools/call whoami (POST), a GET stream or a DELETE
// on session sid and returns the status and, unless a stream opened, the
// body.
func legacyRequest(t *testing.T, gw, method, sid, authz string) (int, string) {
	t.Helper()
	body := ""
	if method == http.MethodPost {
		body = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`
	}
	resp := legacyDo(t, gw, method, sid, authz, body)
	defer resp.Body.Close()
	if method == http.MethodGet && resp.StatusCode == http.StatusOK {
		return resp.StatusCode, ""
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func legacyDo(t *testing.T, gw, method, sid, authz, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(method, "http://"+gw+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Authorization", authz)
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s through %s: %v", method, gw, err)
	}
	return resp
}

package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/balance"
	"github.com/mcpfleet/mcpfleet/internal/testserver"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

const challengeBody = `{"error":"invalid_token","error_description":"the token is missing"}`

// protected is an OAuth-protected MCP replica: /mcp wants "Bearer good",
// and it serves its protected resource metadata (RFC 9728) and its
// authorization server's metadata (RFC 8414), naming the resource by the
// URL the client used (X-Forwarded-Host and -Proto).
func protected(t *testing.T, name string, mcpHits *atomic.Int32) *httptest.Server {
	t.Helper()
	ts, err := testserver.New(name, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := ts.Handler()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("X-Forwarded-Proto") + "://" + r.Header.Get("X-Forwarded-Host")
		switch r.URL.Path {
		case "/mcp":
			mcpHits.Add(1)
			if r.Header.Get("Authorization") != "Bearer good" {
				w.Header().Add("WWW-Authenticate", `Bearer resource_metadata="`+origin+`/.well-known/oauth-protected-resource/mcp", scope="tools:read"`)
				w.Header().Add("WWW-Authenticate", `Bearer error="invalid_token", error_description="the token is missing"`)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				io.WriteString(w, challengeBody)
				return
			}
			h.ServeHTTP(w, r)
		case "/.well-known/oauth-protected-resource/mcp":
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"resource": origin + "/mcp", "authorization_servers": []string{origin}, "replica": name})
		case "/.well-known/oauth-authorization-server":
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"issuer": origin, "token_endpoint": origin + "/token"})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// TestOAuthProtectedReplicaBehindTheGateway: the 401 reaches the client
// byte for byte, every WWW-Authenticate field intact and never retried; both
// metadata documents are fetched through the gateway and name the URL the
// client used; a valid token is served; other paths stay 404.
func TestOAuthProtectedReplicaBehindTheGateway(t *testing.T) {
	var hits atomic.Int32
	var specs []upstream.Spec
	for _, name := range []string{"a", "b"} {
		specs = append(specs, upstream.Spec{Name: name, URL: protected(t, name, &hits).URL + "/mcp"})
	}
	gw := startGatewayOn(t, specs, &Options{Balance: balance.RoundRobin}, io.Discard)
	front := newFront(gw)
	t.Cleanup(front.Close)

	r := newRaw(t, front.URL+"/mcp", "2026-07-28")
	resp := r.post(context.Background(), 1, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}}, nil)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	challenges := resp.Header.Values("WWW-Authenticate")
	if resp.StatusCode != 401 || string(body) != challengeBody || len(challenges) != 2 ||
		!strings.Contains(challenges[0], `resource_metadata="http://`+strings.TrimPrefix(front.URL, "http://")+`/.well-known/oauth-protected-resource/mcp"`) ||
		!strings.Contains(challenges[0], `scope="tools:read"`) || !strings.Contains(challenges[1], `error_description="the token is missing"`) {
		t.Fatalf("401 changed on the way: %d %q %q", resp.StatusCode, challenges, body)
	}
	if hits.Load() != 1 {
		t.Fatalf("the 401 was retried: %d requests reached the replicas", hits.Load())
	}

	get := func(path, method string) (int, map[string]any) {
		req, _ := http.NewRequest(method, front.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var doc map[string]any
		json.NewDecoder(resp.Body).Decode(&doc)
		return resp.StatusCode, doc
	}
	code, prm := get("/.well-known/oauth-protected-resource/mcp", http.MethodGet)
	if code != 200 || prm["resource"] != front.URL+"/mcp" {
		t.Fatalf("protected resource metadata: %d %v, want resource %s/mcp", code, prm, front.URL)
	}
	if code, asm := get("/.well-known/oauth-authorization-server", http.MethodGet); code != 200 || asm["issuer"] != front.URL {
		t.Fatalf("authorization server metadata: %d %v", code, asm)
	}
	if code, _ := get("/.well-known/oauth-authorization-server", http.MethodHead); code != 200 {
		t.Fatalf("HEAD of the metadata: %d", code)
	}
	if code, _ := get("/.well-known/oauth-authorization-server", http.MethodDelete); code != http.StatusMethodNotAllowed {
		t.Fatalf("DELETE of the metadata: %d, want 405", code)
	}
	if code, _ := get("/.well-known/other", http.MethodGet); code != 404 {
		t.Fatalf("another path: %d, want 404 from the gateway", code)
	}

	resp = r.post(context.Background(), 2, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}}, map[string]string{"Authorization": "Bearer good"})
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"text":"`) {
		t.Fatalf("with a valid token: %d %s", resp.StatusCode, body)
	}
}

// TestPassthroughPaths: a configured path goes to a replica, any method,
// and a prefix ending in "/" covers what is under it.
func TestPassthroughPaths(t *testing.T) {
	var got atomic.Value
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.Store(r.Method + " " + r.URL.RequestURI() + " " + string(b))
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(s.Close)
	gw := startGatewayOn(t, []upstream.Spec{{Name: "a", URL: s.URL + "/mcp"}}, &Options{PassthroughPaths: []string{"/token", "/oauth/"}}, io.Discard)
	front := newFront(gw)
	t.Cleanup(front.Close)
	for path, want := range map[string]int{"/token": 201, "/oauth/register?x=1": 201, "/tokens": 404, "/oauth": 404} {
		resp, err := http.Post(front.URL+path, "application/x-www-form-urlencoded", strings.NewReader("grant_type=x"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("POST %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
	if v, _ := got.Load().(string); v != "POST /oauth/register?x=1 grant_type=x" && v != "POST /token grant_type=x" {
		t.Errorf("the replica saw %q", v)
	}
}

package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfleet/mcpfleet/internal/authz"
	"github.com/mcpfleet/mcpfleet/internal/identity"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// verifier verifies tokens of idp for issuer https://idp and audience
// mcp.
func verifier(t *testing.T, idp *issuer) *identity.Verifier {
	t.Helper()
	v, err := identity.NewVerifier(identity.VerifyOptions{Issuers: []string{"https://idp"}, Audiences: []string{"mcp"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.SetKeys(idp.jwks); err != nil {
		t.Fatal(err)
	}
	return v
}

// getWith sends method to url with Host host ("" for the URL's), and
// returns the status, the WWW-Authenticate field and the body.
func getWith(t *testing.T, method, url, host string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), string(b)
}

// TestOwnResourceMetadata: with verification on and no passthrough path
// claiming it, the gateway answers the protected resource metadata itself
// (RFC 9728), at the root and the path-inserted URL, and no replica sees
// the request; the 401's challenge names that URL and the scopes.
func TestOwnResourceMetadata(t *testing.T) {
	var hits atomic.Int32
	replica := protected(t, "a", &hits)
	gw := startGatewayOn(t, []upstream.Spec{{Name: "a", URL: replica.URL + "/mcp"}}, &Options{Auth: verifier(t, newIssuer(t, "k1")),
		AuthorizationServers: []string{"https://idp"}, AuthScopesSupported: []string{"mcp:read", "mcp:write"}}, io.Discard)
	front := newFront(gw)
	t.Cleanup(front.Close)

	want := resourceMetadataDoc{Resource: front.URL + "/mcp", AuthorizationServers: []string{"https://idp"},
		ScopesSupported: []string{"mcp:read", "mcp:write"}, BearerMethodsSupported: []string{"header"}}
	for _, path := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
		code, _, body := getWith(t, "GET", front.URL+path, "")
		var got resourceMetadataDoc
		if err := json.Unmarshal([]byte(body), &got); code != 200 || err != nil {
			t.Fatalf("GET %s: %d %s (%v)", path, code, body, err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("GET %s (-want +got):\n%s", path, d)
		}
		if strings.Contains(body, "replica") {
			t.Errorf("GET %s: a replica's document: %s", path, body)
		}
	}
	if code, _, _ := getWith(t, "POST", front.URL+"/.well-known/oauth-protected-resource/mcp", ""); code != 405 {
		t.Errorf("POST: %d, want 405", code)
	}
	// Other discovery documents still pass through.
	if code, _, body := getWith(t, "GET", front.URL+"/.well-known/oauth-authorization-server", ""); code != 200 || !strings.Contains(body, "token_endpoint") {
		t.Errorf("the authorization server's metadata: %d %s", code, body)
	}
	code, challenge, _ := getWith(t, "POST", front.URL+"/mcp", "")
	wantChallenge := `Bearer resource_metadata="` + front.URL + `/.well-known/oauth-protected-resource/mcp", scope="mcp:read mcp:write"`
	if code != 401 || challenge != wantChallenge {
		t.Errorf("no token: %d %q, want 401 %q", code, challenge, wantChallenge)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("%d requests reached the replica's /mcp", n)
	}
}

// TestOwnResourceMetadataHosts: the default resource names only a Host the
// Host guard took; auth.resource names itself whatever the Host; a
// passthrough path that claims the document leaves it to the replicas.
func TestOwnResourceMetadataHosts(t *testing.T) {
	var hits atomic.Int32
	replica := protected(t, "a", &hits)
	specs := []upstream.Spec{{Name: "a", URL: replica.URL + "/mcp"}}
	const doc = "/.well-known/oauth-protected-resource/mcp"

	guarded := newFront(startGatewayOn(t, specs, &Options{Auth: verifier(t, newIssuer(t, "k1")), AllowedHosts: []string{"mcp.example.com"}}, io.Discard))
	t.Cleanup(guarded.Close)
	if code, _, body := getWith(t, "GET", guarded.URL+doc, "evil.example"); code != 403 || strings.Contains(body, "evil") {
		t.Errorf("a Host the guard refuses: %d %s, want 403 naming nothing", code, body)
	}
	if code, _, body := getWith(t, "GET", guarded.URL+doc, "mcp.example.com:8443"); code != 200 || !strings.Contains(body, `"resource":"http://mcp.example.com:8443/mcp"`) {
		t.Errorf("an allowed Host: %d %s", code, body)
	}

	fixed := newFront(startGatewayOn(t, specs, &Options{Auth: verifier(t, newIssuer(t, "k1")), AllowAnyHost: true,
		AuthResource: "https://mcp.example.com/team/mcp"}, io.Discard))
	t.Cleanup(fixed.Close)
	if code, _, body := getWith(t, "GET", fixed.URL+doc, "evil.example"); code != 200 || !strings.Contains(body, `"resource":"https://mcp.example.com/team/mcp"`) ||
		strings.Contains(body, "evil") || strings.Contains(body, "authorization_servers") || strings.Contains(body, "scopes_supported") {
		t.Errorf("auth.resource: %d %s", code, body)
	}
	if code, challenge, _ := getWith(t, "POST", fixed.URL+"/mcp", "evil.example"); code != 401 ||
		challenge != `Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/team/mcp"` {
		t.Errorf("auth.resource's challenge: %d %q", code, challenge)
	}

	passed := newFront(startGatewayOn(t, specs, &Options{Auth: verifier(t, newIssuer(t, "k1")), PassthroughPaths: []string{"/.well-known/"}}, io.Discard))
	t.Cleanup(passed.Close)
	if code, _, body := getWith(t, "GET", passed.URL+doc, ""); code != 200 || !strings.Contains(body, `"replica":"a"`) {
		t.Errorf("claimed by a passthrough path: %d %s, want the replica's", code, body)
	}
}

// TestOwnResourceMetadataPerService: each service answers its own
// path-inserted document, and the default service the root one.
func TestOwnResourceMetadataPerService(t *testing.T) {
	var hits atomic.Int32
	replica := protected(t, "a", &hits)
	specs := []upstream.Spec{{Name: "a", URL: replica.URL + "/mcp"}}
	var list []Service
	for _, name := range []string{"one", "two"} {
		gw := startGatewayOn(t, specs, &Options{Auth: verifier(t, newIssuer(t, "k1")), Path: "/" + name, Service: name,
			AuthScopesSupported: []string{name + ":use"}}, io.Discard)
		list = append(list, Service{Name: name, Gateway: gw, Default: name == "two"})
	}
	front := newFront(NewServices(list, false))
	t.Cleanup(front.Close)
	for path, want := range map[string]string{
		"/.well-known/oauth-protected-resource/one": `"resource":"` + front.URL + `/one","scopes_supported":["one:use"]`,
		"/.well-known/oauth-protected-resource/two": `"resource":"` + front.URL + `/two","scopes_supported":["two:use"]`,
		"/.well-known/oauth-protected-resource":     `"resource":"` + front.URL + `/two","scopes_supported":["two:use"]`,
	} {
		if code, _, body := getWith(t, "GET", front.URL+path, ""); code != 200 || !strings.Contains(body, want) {
			t.Errorf("GET %s: %d %s, want %s", path, code, body, want)
		}
	}
}

// TestResourceMetadataScopesFromRules: without auth.scopes_supported, the
// metadata lists the scopes the authorization rules name, the scopes a
// client may step up to.
func TestResourceMetadataScopesFromRules(t *testing.T) {
	var hits atomic.Int32
	replica := protected(t, "a", &hits)
	rules, err := authz.Compile([]authz.Rule{
		{Name: "write", Match: `mcp.tool == "mutate" && !("mcp:write" in caller.scopes)`, Effect: authz.Deny, Scopes: []string{"mcp:write"}},
		{Name: "admin", Match: `mcp.tool == "restart_now" && !("mcp:admin" in caller.scopes)`, Effect: authz.Deny, Scopes: []string{"mcp:admin", "mcp:write"}},
	}, authz.Allow)
	if err != nil {
		t.Fatal(err)
	}
	gw := startGatewayOn(t, []upstream.Spec{{Name: "a", URL: replica.URL + "/mcp"}}, &Options{Auth: verifier(t, newIssuer(t, "k1")), Authz: rules}, io.Discard)
	front := newFront(gw)
	t.Cleanup(front.Close)
	code, _, body := getWith(t, "GET", front.URL+"/.well-known/oauth-protected-resource/mcp", "")
	var got resourceMetadataDoc
	if err := json.Unmarshal([]byte(body), &got); code != 200 || err != nil {
		t.Fatalf("%d %s (%v)", code, body, err)
	}
	if d := cmp.Diff([]string{"mcp:write", "mcp:admin"}, got.ScopesSupported); d != "" {
		t.Errorf("scopes_supported (-want +got):\n%s", d)
	}
}

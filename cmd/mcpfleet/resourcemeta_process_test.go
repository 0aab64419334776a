package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestServeOwnResourceMetadataTypeScript: `serve` with auth on and no
// passthrough path answers the protected resource metadata itself, and the
// official TypeScript SDK's auth helpers find it from the 401, read it and
// take its resource for the server's (testdata/prm-client.mjs).
func TestServeOwnResourceMetadataTypeScript(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	node, modules := nodeTools(t)
	_, keys := writeJWKS(t)
	_, ups := limitsFleet(t)
	gws, _ := startGateways(t, 1, ups+"auth: {jwks_file: '"+keys+"', issuers: ['https://idp.example.com'], audiences: [mcp], "+
		"scopes_supported: ['mcp:read', 'mcp:write']}\n")
	script := nodeScript(t, modules, "prm-client.mjs")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	server := "http://" + gws[0] + "/mcp"
	var stderr strings.Builder
	cmd := exec.CommandContext(ctx, node, script, server)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("client: %v\n%s", err, stderr.String())
	}
	type doc struct {
		Resource               string   `json:"resource"`
		AuthorizationServers   []string `json:"authorization_servers"`
		ScopesSupported        []string `json:"scopes_supported"`
		BearerMethodsSupported []string `json:"bearer_methods_supported"`
	}
	var got struct {
		Status              int    `json:"status"`
		ResourceMetadataURL string `json:"resourceMetadataUrl"`
		Scope               string `json:"scope"`
		Metadata            doc    `json:"metadata"`
		Resource            string `json:"resource"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("client said %q: %v", out, err)
	}
	want := got
	want.Status, want.ResourceMetadataURL, want.Scope = 401, "http://"+gws[0]+"/.well-known/oauth-protected-resource/mcp", "mcp:read mcp:write"
	want.Metadata = doc{Resource: server, AuthorizationServers: []string{"https://idp.example.com"},
		ScopesSupported: []string{"mcp:read", "mcp:write"}, BearerMethodsSupported: []string{"header"}}
	want.Resource = server
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("what the TypeScript SDK found (-want +got):\n%s", d)
	}
}

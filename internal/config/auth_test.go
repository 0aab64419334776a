package config

import (
	"strings"
	"testing"
	"time"
)

// TestTokenRules: verification needs an audience, or audiences_any said on
// purpose; tokens live at most max_token_lifetime (a day unless set); keys
// come over https, or plain http from loopback only.
func TestTokenRules(t *testing.T) {
	const base = "upstreams: [{url: 'http://127.0.0.1:1/mcp'}]\n"
	tests := []struct {
		name string
		yaml string
		want string // "" means valid; else text the error holds
	}{
		{"no audience", "auth: {jwks_file: k.json, issuers: [i]}\n", "auth.audiences: empty"},
		{"no audience cites the RFC", "auth: {jwks_file: k.json, issuers: [i]}\n", "RFC 8707 and the MCP authorization spec"},
		{"audiences_any", "auth: {jwks_file: k.json, issuers: [i], audiences_any: true}\n", ""},
		{"an audience", "auth: {jwks_file: k.json, issuers: [i], audiences: ['https://mcp.example.com/mcp']}\n", ""},
		{"audiences_any without verification", "auth: {audiences_any: true}\n", "auth.issuers"},
		{"lifetime off", "auth: {jwks_file: k.json, issuers: [i], audiences: [a], max_token_lifetime: 0s}\n", ""},
		{"lifetime negative", "auth: {jwks_file: k.json, issuers: [i], audiences: [a], max_token_lifetime: -1h}\n", "auth.max_token_lifetime"},
		{"jwks over http", "auth: {jwks_url: 'http://example/jwks', issuers: [i], audiences: [a]}\n", "auth.jwks_url"},
		{"jwks over http to loopback", "auth: {jwks_url: 'http://127.0.0.1:8081/jwks', issuers: [i], audiences: [a]}\n", ""},
		{"jwks over http to localhost", "auth: {jwks_url: 'http://localhost:8081/jwks', issuers: [i], audiences: [a]}\n", ""},
		{"jwks over https", "auth: {jwks_url: 'https://idp.example.com/jwks', issuers: [i], audiences: [a]}\n", ""},
		{"metadata keys", "auth: {jwks_file: k.json, issuers: [i], audiences: [a], resource: 'https://mcp.example.com/mcp', " +
			"authorization_servers: ['https://idp.example.com'], scopes_supported: ['mcp:read', 'mcp:write']}\n", ""},
		{"metadata without verification", "auth: {scopes_supported: [mcp:read]}\n", "auth.issuers"},
		{"a relative resource", "auth: {jwks_file: k.json, issuers: [i], audiences: [a], resource: /mcp}\n", "auth.resource"},
		{"a resource with a fragment", "auth: {jwks_file: k.json, issuers: [i], audiences: [a], resource: 'https://mcp.example.com/mcp#x'}\n", "auth.resource"},
		{"a resource with a user", "auth: {jwks_file: k.json, issuers: [i], audiences: [a], resource: 'https://u@mcp.example.com/mcp'}\n", "auth.resource"},
		{"an authorization server not a URL", "auth: {jwks_file: k.json, issuers: [i], audiences: [a], authorization_servers: [idp]}\n", "auth.authorization_servers[0]"},
		{"a scope with a space", "auth: {jwks_file: k.json, issuers: [i], audiences: [a], scopes_supported: [ok, 'mcp read']}\n", "auth.scopes_supported[1]"},
		{"a scope with a quote", "auth: {jwks_file: k.json, issuers: [i], audiences: [a], scopes_supported: ['a\"b']}\n", "auth.scopes_supported[0]"},
		{"services name their own audiences", "auth: {jwks_file: k.json, issuers: [i]}\nservices:\n" +
			"  - {name: a, path: /a/mcp, auth: {audiences: [a]}, upstreams: [{url: 'http://127.0.0.1:1/mcp'}]}\n", ""},
		{"a service without an audience", "auth: {jwks_file: k.json, issuers: [i]}\nservices:\n" +
			"  - {name: a, path: /a/mcp, auth: {audiences: [a]}, upstreams: [{url: 'http://127.0.0.1:1/mcp'}]}\n" +
			"  - {name: b, path: /b/mcp, upstreams: [{url: 'http://127.0.0.1:2/mcp'}]}\n", "auth.audiences: empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			y := tt.yaml
			if !strings.Contains(y, "services:") {
				y = base + y
			}
			_, err := Parse([]byte(y))
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Parse error = %v, want one holding %q", err, tt.want)
			}
		})
	}
	if d := time.Duration(Default().Auth.MaxTokenLifetime); d != 24*time.Hour {
		t.Errorf("auth.max_token_lifetime defaults to %s, want 24h", d)
	}
}

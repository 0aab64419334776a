package config

import (
	"strings"
	"testing"
)

// TestEdgeKeys: what allowed_origins, allowed_hosts and the admin keys
// take, and that an admin listener off loopback needs a token.
func TestEdgeKeys(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want string // a part of the error; "" for none
	}{
		{"defaults", "", ""},
		{"origins", `allowed_origins: ["https://app.example.com", "http://localhost:3000"]`, ""},
		{"any origin", `allowed_origins: ["*"]`, ""},
		{"star among others", `allowed_origins: ["*", "https://app.example.com"]`, "give it alone"},
		{"origin with a path", `allowed_origins: ["https://app.example.com/"]`, "allowed_origins"},
		{"null origin", `allowed_origins: ["null"]`, "allowed_origins"},
		{"hosts", `allowed_hosts: [mcp.example.com, "*.mcp.example.com", 192.0.2.1]`, ""},
		{"host with a port", `allowed_hosts: ["mcp.example.com:443"]`, "allowed_hosts"},
		{"host in capitals", `allowed_hosts: [MCP.example.com]`, "allowed_hosts"},
		{"host with a trailing dot", `allowed_hosts: [mcp.example.com.]`, "allowed_hosts"},
		{"hosts and any host", "allowed_hosts: [mcp.example.com]\nallow_any_host: true", "one or the other"},
		{"admin on loopback", "admin: 127.0.0.1:9090", ""},
		{"admin on localhost", "admin: localhost:9090", ""},
		{"admin on ::1", "admin: '[::1]:9090'", ""},
		{"admin everywhere", "admin: 0.0.0.0:9090", "head -c 32 /dev/urandom"},
		{"admin everywhere, no host", "admin: ':9090'", "admin_token_file"},
		{"admin on [::]", "admin: '[::]:9090'", "admin_token_file"},
		{"admin on a name", "admin: gateway.example:9090", "admin_token_file"},
		{"admin everywhere with a token", "admin: 0.0.0.0:9090\nadmin_token_file: /run/admin.token", ""},
		{"pprof without a token", "admin: 127.0.0.1:9090\nadmin_pprof: true", "admin_pprof"},
		{"pprof with a token", "admin: 127.0.0.1:9090\nadmin_pprof: true\nadmin_token_file: /run/admin.token", ""},
		{"pprof without admin", "admin_pprof: true", "admin_pprof"},
		{"metrics closed without a token", "admin: 127.0.0.1:9090\nadmin_metrics_open: false", "admin_metrics_open"},
		{"a service's host allowed", "allowed_hosts: [mcp.example.com, \"*.docs.example.com\"]\nservices:\n  - {name: a, hosts: [mcp.example.com]}\n  - {name: b, hosts: [\"*.docs.example.com\"]}", ""},
		{"a service's host not allowed", "allowed_hosts: [mcp.example.com]\nservices:\n  - {name: a, hosts: [mcp.example.com]}\n  - {name: b, hosts: [docs.example.com]}", "docs.example.com is not in allowed_hosts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte("upstreams: [{url: http://127.0.0.1:9001/mcp}]\n" + tt.yaml))
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("error %v, want one naming %q", err, tt.want)
			}
		})
	}
	if c := Default(); !c.AdminMetricsOpen || c.AdminPprof || c.AllowedOrigins != nil || c.AllowedHosts != nil {
		t.Errorf("defaults: admin_metrics_open %v, admin_pprof %v, allowed_origins %v, allowed_hosts %v", c.AdminMetricsOpen, c.AdminPprof, c.AllowedOrigins, c.AllowedHosts)
	}
}

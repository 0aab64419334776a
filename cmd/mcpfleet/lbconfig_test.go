package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLbconfigServices runs "mcpfleet lbconfig" on a configuration with
// services: each service gets an upstream (nginx) or a backend (HAProxy)
// of its own replicas; a configuration without services keeps its one.
func TestLbconfigServices(t *testing.T) {
	dir := t.TempDir()
	services := filepath.Join(dir, "services.yaml")
	single := filepath.Join(dir, "single.yaml")
	os.WriteFile(services, []byte(`services:
  - name: github
    path: /github/mcp
    upstreams: [{name: g1, url: "http://10.0.0.1:8080/mcp"}]
  - name: jira
    hosts: [jira.example.com]
    upstreams: [{name: j1, url: "http://10.0.1.1:8080/mcp"}]
`), 0o600)
	os.WriteFile(single, []byte("upstreams: [{name: r1, url: 'http://10.0.0.1:8080/mcp'}]\n"), 0o600)
	for _, tc := range []struct {
		kind, file string
		want, not  []string
	}{
		{"nginx", services, []string{"upstream mcp_fleet_github {", "upstream mcp_fleet_jira {", "location = /github/mcp {",
			"server_name jira.example.com;", "return 404;"}, []string{"upstream mcp_fleet {"}},
		{"haproxy", services, []string{"backend mcp_fleet_github", "backend mcp_fleet_jira", "use_backend mcp_fleet_jira if host_jira path_jira",
			"default_backend mcp_no_service"}, []string{"backend mcp_fleet\n"}},
		{"nginx", single, []string{"upstream mcp_fleet {", "location / {\n            proxy_pass http://mcp_fleet;"}, []string{"mcp_fleet_", "return 404;"}},
		{"haproxy", single, []string{"default_backend mcp_fleet\n", "backend mcp_fleet\n"}, []string{"mcp_fleet_", "mcp_no_service"}},
	} {
		t.Run(tc.kind+" "+filepath.Base(tc.file), func(t *testing.T) {
			code, stdout, stderr := runCmd(t, context.Background(), "lbconfig", tc.kind, "--config", tc.file, "--listen", "127.0.0.1:8080")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("output lacks %q", w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(stdout, n) {
					t.Errorf("output has %q", n)
				}
			}
		})
	}
}

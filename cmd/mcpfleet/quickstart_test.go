package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/config"
)

// TestDemoNamesInspectorForNode20: the demo's Inspector command for Node
// 20 pins the release that runs there and gives it the gateway's URL, and
// the newer command says which Node it needs.
func TestDemoNamesInspectorForNode20(t *testing.T) {
	cfg := config.Default()
	cfg.Upstreams = []config.Upstream{{Name: "replica-a", URL: "http://127.0.0.1:9001/mcp"}}
	var out bytes.Buffer
	printDemo(&out, "127.0.0.1:8080", nil, cfg)
	for _, want := range []string{
		"npx -y @modelcontextprotocol/inspector@" + inspectorNode20 + "\n",
		"&transport=streamable-http&serverUrl=http://127.0.0.1:8080/mcp",
		"on Node " + inspectorNode + " or newer:\n  npx @modelcontextprotocol/inspector --transport http --server-url http://127.0.0.1:8080/mcp",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestSecretFilesIgnored: the repository's .gitignore covers the names
// the docs give the secret file, wherever it is written in the tree.
func TestSecretFilesIgnored(t *testing.T) {
	b, err := os.ReadFile("../../.gitignore")
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		lines[strings.TrimSpace(l)] = true
	}
	for _, want := range []string{"secret.yaml", "*.secret.yaml"} {
		if !lines[want] {
			t.Errorf(".gitignore lacks the line %q", want)
		}
	}
}

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testproc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestStdioEverythingServer: the TypeScript everything server, a real npm
// stdio server, as a fleet of 3 pooled children behind serve: the official
// Go SDK client lists and calls its tools in both eras, with progress.
func TestStdioEverythingServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	node, modules := nodeTools(t)
	server := filepath.Join(modules, "@modelcontextprotocol", "server-everything", "dist", "index.js")
	gw := testproc.FreeAddr(t)
	cfg := `listen: ` + gw + `
secret_file: ` + writeSecret(t) + `
balance: round-robin
upstreams:
  - name: everything
    stdio:
      command: [` + node + `, ` + server + `, stdio]
      processes: 3
`
	path := filepath.Join(t.TempDir(), "mcpfleet.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	startProcess(t, "serve", "--config", path)
	testproc.WaitReady(t, "http://"+gw+"/readyz")
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var progress atomic.Int32
			c := mcp.NewClient(&mcp.Implementation{Name: "stdio-npm-test", Version: "1"}, &mcp.ClientOptions{
				ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress.Add(1) },
			})
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + gw + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			tools, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range tools.Tools {
				names = append(names, tool.Name)
			}
			if !strings.Contains(strings.Join(names, " "), "echo") {
				t.Fatalf("tools %v, want echo among them", names)
			}
			for i := range 6 { // round-robin: every child, twice in the stateless era
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi " + version}})
				if err != nil || res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "hi "+version) {
					t.Fatalf("echo %d: %+v, %v", i, res, err)
				}
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{
				Name: "trigger-long-running-operation", Arguments: map[string]any{"duration": 1, "steps": 4},
				Meta: mcp.Meta{"progressToken": "lro-" + version},
			})
			if err != nil || res.IsError {
				t.Fatalf("trigger-long-running-operation: %+v, %v", res, err)
			}
			if progress.Load() < 2 {
				t.Errorf("%d progress notifications, want the operation's steps", progress.Load())
			}
		})
	}
}

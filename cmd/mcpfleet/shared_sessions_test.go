package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testproc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSharedSessionsAreBalanced: replicas that share their sessions (here
// testservers in the SDK's stateless mode, which accepts any session ID
// under MCPGODEBUG=allowsessionsinstateless=1) behind a gateway with
// sessions: shared spread one 2025-11-25 session's calls as balance says
// (round-robin: every replica); with sessions: pinned every call goes to
// the replica that minted the session.
func TestSharedSessionsAreBalanced(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	t.Setenv("MCPGODEBUG", "allowsessionsinstateless=1") // inherited by the replicas
	var ups []string
	for _, name := range []string{"a", "b", "c"} {
		addr := testproc.FreeAddr(t)
		startProcess(t, "testserver", "--listen", addr, "--name", name, "--era", "2025", "--stateless")
		testproc.WaitReady(t, "http://"+addr+"/health")
		ups = append(ups, fmt.Sprintf("  - {name: %s, url: \"http://%s/mcp\"}", name, addr))
	}
	for _, mode := range []string{"pinned", "shared"} {
		t.Run(mode, func(t *testing.T) {
			gw := testproc.FreeAddr(t)
			cfg := filepath.Join(t.TempDir(), "gw.yaml")
			body := fmt.Sprintf("listen: %s\nsecret_file: %s\nbalance: round-robin\nsessions: %s\nhealth_check: {interval: 0s}\nupstreams:\n", gw, writeSecret(t), mode)
			for _, u := range ups {
				body += u + "\n"
			}
			if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			startProcess(t, "serve", "--config", cfg)
			testproc.WaitReady(t, "http://"+gw+"/readyz")

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c := mcp.NewClient(&mcp.Implementation{Name: "mcpfleet-test", Version: "1"}, nil)
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + gw + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if cs.ID() == "" {
				t.Fatal("no session ID: the replicas do not issue 2025-11-25 sessions")
			}
			seen := map[string]int{}
			for range 9 {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami"})
				if err != nil {
					t.Fatal(err)
				}
				seen[res.Content[0].(*mcp.TextContent).Text]++
			}
			want := 1
			if mode == "shared" {
				want = 3
			}
			if len(seen) != want {
				t.Fatalf("sessions %s: whoami answered by %v, want %d replicas", mode, seen, want)
			}
		})
	}
}

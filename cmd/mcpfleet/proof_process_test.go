package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/admin"
	"github.com/mcpfleet/mcpfleet/internal/testproc"
)

// TestWrongUpstreamPathIsDown is the Done-when of a wrong upstream URL:
// serve with --upstream http://PORT/sse in front of the npm everything
// server in streamableHttp mode (which answers /sse with Express's HTML
// 404) has the replica down with the reason "no MCP endpoint at ... (HTTP
// 404, text/html)" in /api/fleet and in its log, once, and /readyz 503;
// the same server at /mcp is up, proven by its MCP endpoint alone.
func TestWrongUpstreamPathIsDown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	node, modules := nodeTools(t)
	addr := startEverything(t, node, modules, "streamableHttp")
	for _, tt := range []struct {
		path, state, reason string
		ready               int
	}{
		{"/sse", "down", "no MCP endpoint at http://" + addr + "/sse (HTTP 404, text/html)", http.StatusServiceUnavailable},
		{"/mcp", "up", "", http.StatusOK},
	} {
		t.Run(strings.TrimPrefix(tt.path, "/"), func(t *testing.T) {
			gw, adm := testproc.FreeAddr(t), testproc.FreeAddr(t)
			cfg := filepath.Join(t.TempDir(), "fleet.yaml")
			os.WriteFile(cfg, []byte("health_check: {interval: 400ms, timeout: 300ms}\n"), 0o600)
			logs := startLogged(t, "serve", "--config", cfg, "--listen", gw, "--admin", adm, "--upstream", "http://"+addr+tt.path)
			var r admin.Replica
			deadline := time.Now().Add(15 * time.Second)
			for r = replicaView(t, adm); r.State != tt.state || r.LastCheck == nil; r = replicaView(t, adm) {
				if time.Now().After(deadline) {
					t.Fatalf("replica %+v after 15s, want %s; log:\n%s", r, tt.state, logs.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
			if tt.reason != "" && r.LastCheck.Reason != tt.reason {
				t.Errorf("last check's reason %q, want %q", r.LastCheck.Reason, tt.reason)
			}
			time.Sleep(1500 * time.Millisecond) // three more checks
			if got := getStatus(t, "http://"+gw+"/readyz"); got != tt.ready {
				t.Errorf("/readyz %d, want %d", got, tt.ready)
			}
			n := strings.Count(logs.String(), "no MCP endpoint")
			if want := map[bool]int{true: 1, false: 0}[tt.reason != ""]; n != want {
				t.Errorf("the log says %d times that there is no MCP endpoint, want %d:\n%s", n, want, logs.String())
			}
		})
	}
}

// replicaView returns the one replica of GET /api/fleet at admin address
// adm, or a zero Replica while the admin listener is not up yet.
func replicaView(t *testing.T, adm string) admin.Replica {
	t.Helper()
	resp, err := http.Get("http://" + adm + "/api/fleet")
	if err != nil {
		return admin.Replica{}
	}
	defer resp.Body.Close()
	var v admin.Fleet
	if b, _ := io.ReadAll(resp.Body); json.Unmarshal(b, &v) != nil || len(v.Replicas) != 1 {
		return admin.Replica{}
	}
	return v.Replicas[0]
}

// getStatus returns the status of a GET of u.
func getStatus(t *testing.T, u string) int {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfleet/mcpfleet/internal/testserver"
)

// TestAlertAndDashboardMetricsAreLive runs a gateway process in front of
// three testserver replicas with limits and the cache on, makes a short
// load (2026-07-28 calls and a tool list, a 2025-11-25 session with a
// progress stream, a request of a session that does not exist, a replica
// that goes away), then scrapes the admin listener's /metrics: every
// metric an alert rule (deploy/prometheus/alerts.yaml) or a dashboard panel
// (deploy/grafana/mcpfleet.json) names must be there. With
// MCPFLEET_SAVE_METRICS=FILE it saves the page, the fixture of
// TestMissingMetricFailsTheCheck.
func TestAlertAndDashboardMetricsAreLive(t *testing.T) {
	uses := ruleAndPanelQueries(t)
	var ups strings.Builder
	ups.WriteString("upstreams:\n")
	servers := map[string]*httptest.Server{}
	for _, name := range []string{"a", "b", "c"} {
		s, err := testserver.New(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(s.Handler())
		t.Cleanup(hs.Close)
		servers[name] = hs
		fmt.Fprintf(&ups, "  - {name: %s, url: '%s/mcp'}\n", name, hs.URL)
	}
	cfg := fmt.Sprintf("secret_file: %s\nhealth_check: {interval: 250ms, timeout: 250ms}\nlimits: {rate: 1000}\ncache: {mode: local}\n%s",
		writeSecret(t), ups.String())
	var admins []string
	gw := startGatewaysWithAdmin(t, 1, cfg, &admins)[0]
	metricsURL := "http://" + admins[0] + "/metrics"

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 3 {
		if a := postCall(t, gw, "caller", 0.01); a.status != http.StatusOK {
			t.Fatalf("call %d: %d %s", i, a.status, a.body)
		}
	}
	resp, err := post2026(gw, "tools/list", "", "", 7, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	c := mcp.NewClient(&mcp.Implementation{Name: "metrics-test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {},
	})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + gw + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	params := &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"seconds": 0.3, "progress_every": 0.1}}
	params.SetProgressToken("p")
	if _, err := cs.CallTool(ctx, params); err != nil {
		t.Fatalf("calling sleep with progress: %v", err)
	}
	if code := postSession(t, "http://"+gw+"/mcp", "not-a-session"); code != http.StatusNotFound {
		t.Errorf("a request of a session that does not exist: %d, want 404", code)
	}

	// Replica c goes away: its health checks fail and it turns down.
	servers["c"].CloseClientConnections()
	servers["c"].Close()
	var page string
	for deadline := time.Now().Add(10 * time.Second); ; {
		code, body := probeStatus(t, metricsURL)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", metricsURL, code, body)
		}
		page = body
		if strings.Contains(page, `mcpfleet_replica_state{replica="c",state="down"} 1`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica c never turned down:\n%s", page)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if p := os.Getenv("MCPFLEET_SAVE_METRICS"); p != "" {
		if err := os.WriteFile(p, []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	exposed, err := exposedNames(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	if m := missingMetrics(uses, exposed); len(m) > 0 {
		t.Errorf("metrics the alert rules or the dashboard use are not on a live gateway's /metrics:\n%s", strings.Join(m, "\n"))
	}
}

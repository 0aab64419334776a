package upstream

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// mcpOnly is an MCP server without a health endpoint, as most are: every
// path but /mcp is 404; /mcp answers a JSON-RPC message, or 500.
func mcpOnly(t *testing.T, status int) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/mcp" {
			http.NotFound(w, r)
			return
		}
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, `{"jsonrpc":"2.0","id":"mcpfleet-health","error":{"code":-32022,"message":"unsupported protocol version"}}`)
	}))
	t.Cleanup(s.Close)
	return s
}

// TestNoHealthEndpointStaysEligible: in mode http a replica that answers
// the health path 404 is checked by connection instead (said once in the
// log) and stays up; once it stops, it goes down.
func TestNoHealthEndpointStaysEligible(t *testing.T) {
	s := mcpOnly(t, http.StatusBadRequest)
	f := newFleet(t, Spec{Name: "r", URL: s.URL + "/mcp"})
	var logs strings.Builder
	c := newChecker(t, f, CheckOptions{Mode: CheckHTTP, Fall: 1, Rise: 1, Timeout: time.Second,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	for range 3 {
		c.Check(t.Context())
	}
	r := f.Snapshot().At(0)
	if r.State() != StateUp || !f.Snapshot().Eligible(0) {
		t.Fatalf("a replica without /health is %v, want up", r.State())
	}
	if n := strings.Count(logs.String(), "no health endpoint"); n != 1 {
		t.Fatalf("said %d times that the replica has no health endpoint, want once:\n%s", n, logs.String())
	}
	s.Close()
	c.Check(t.Context())
	if r.State() != StateDown {
		t.Fatalf("a stopped replica without /health is %v, want down", r.State())
	}
}

// TestMCPCheck: in mcp mode the check asks the MCP endpoint; any JSON-RPC
// answer below 500 is alive.
func TestMCPCheck(t *testing.T) {
	for _, tt := range []struct {
		status int
		want   State
	}{{http.StatusOK, StateUp}, {http.StatusBadRequest, StateUp}, {http.StatusInternalServerError, StateDown}} {
		s := mcpOnly(t, tt.status)
		f := newFleet(t, Spec{Name: "r", URL: s.URL + "/mcp"})
		c := newChecker(t, f, CheckOptions{Mode: CheckMCP, Fall: 1, Rise: 1, Timeout: time.Second})
		c.Check(t.Context())
		if got := f.Snapshot().At(0).State(); got != tt.want {
			t.Errorf("MCP answer %d: state %v, want %v", tt.status, got, tt.want)
		}
	}
}

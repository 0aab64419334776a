package testserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestErasConnect connects SDK clients of each era to servers of each era and
// checks the negotiated version, whether a session was minted, tools/list and
// whoami.
func TestErasConnect(t *testing.T) {
	tests := []struct {
		name        string
		era         string
		client      string
		wantVersion string // "" means Connect must fail
		wantSession bool
	}{
		{"both/legacy client", EraBoth, legacyVersion, legacyVersion, true},
		{"both/modern client", EraBoth, modernVersion, modernVersion, false},
		{"2025/legacy client", Era2025, legacyVersion, legacyVersion, true},
		{"2025/modern client falls back to initialize", Era2025, modernVersion, legacyVersion, true},
		{"2026/modern client", Era2026, modernVersion, modernVersion, false},
		{"2026/legacy client refused", Era2026, legacyVersion, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			s, base := startServer(t, "replica-a", tt.era)
			rec := &recorder{}
			cs, err := dial(ctx, base, tt.client, nil, &http.Client{Transport: rec})
			if tt.wantVersion == "" {
				if err == nil {
					_ = cs.Close()
					t.Fatalf("Connect succeeded with %s, want an error", cs.InitializeResult().ProtocolVersion)
				}
				waitNoSessions(t, s)
				return
			}
			if err != nil {
				t.Fatalf("Connect: %v", err)
			}
			if got := cs.InitializeResult().ProtocolVersion; got != tt.wantVersion {
				t.Errorf("negotiated version %q, want %q", got, tt.wantVersion)
			}
			if got := cs.ID() != ""; got != tt.wantSession {
				t.Errorf("session minted = %v (id %q), want %v", got, cs.ID(), tt.wantSession)
			}
			checkToolNames(t, ctx, cs)
			if got := callText(t, ctx, cs, "whoami", nil); got != "replica-a" {
				t.Errorf("whoami = %q, want %q", got, "replica-a")
			}
			if err := cs.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			if tt.wantSession {
				checkLegacyExchanges(t, rec.seen())
			}
			waitNoSessions(t, s)
		})
	}
}

// checkToolNames checks that tools/list names exactly the test tools.
func checkToolNames(t *testing.T, ctx context.Context, cs *mcp.ClientSession) {
	t.Helper()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	var got []string
	for _, tool := range res.Tools {
		got = append(got, tool.Name)
	}
	slices.Sort(got)
	want := []string{"burn", "count", "echo", "fetch", "lookup", "mutate", "sleep", "whoami"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tools/list names (-want +got):\n%s", diff)
	}
}

// checkLegacyExchanges checks that a legacy session opened its GET stream
// and ended with a DELETE, both accepted.
func checkLegacyExchanges(t *testing.T, seen []exchange) {
	t.Helper()
	status := map[string]int{}
	for _, e := range seen {
		if e.method != http.MethodPost {
			status[e.method] = e.status
		}
	}
	want := map[string]int{http.MethodGet: http.StatusOK, http.MethodDelete: http.StatusNoContent}
	if diff := cmp.Diff(want, status); diff != "" {
		t.Errorf("GET and DELETE statuses (-want +got):\n%s", diff)
	}
}

// waitNoSessions waits until s holds no MCP session: closed sessions,
// stateless requests and a failed discover leave none behind.
func waitNoSessions(t *testing.T, s *Server) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		n := 0
		for range s.mcp.Sessions() {
			n++
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d MCP sessions left open", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestEraDispatch checks which handler each kind of /mcp request reaches in
// era "both".
func TestEraDispatch(t *testing.T) {
	tests := []struct {
		name, version, session string
		wantStateless          bool
	}{
		{"initialize without headers", "", "", false},
		{"legacy request in a session", legacyVersion, "abc", false},
		{"modern request", modernVersion, "", true},
		{"later modern version", "2027-01-01", "", true},
		{"modern version in a session", modernVersion, "abc", false},
		{"older version without session", "2025-06-18", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got string
			d := eraDispatch{
				stateful:  http.HandlerFunc(func(http.ResponseWriter, *http.Request) { got = "stateful" }),
				stateless: http.HandlerFunc(func(http.ResponseWriter, *http.Request) { got = "stateless" }),
			}
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			if tt.version != "" {
				r.Header.Set(headerProtocolVersion, tt.version)
			}
			if tt.session != "" {
				r.Header.Set(headerSessionID, tt.session)
			}
			d.ServeHTTP(httptest.NewRecorder(), r)
			want := "stateful"
			if tt.wantStateless {
				want = "stateless"
			}
			if got != want {
				t.Errorf("request went to the %s handler, want %s", got, want)
			}
		})
	}
}

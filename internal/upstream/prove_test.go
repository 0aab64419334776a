package upstream

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sdkReplica serves the official Go SDK's server on /mcp (Streamable
// HTTP, stateful or stateless) or /sse (the 2024-11-05 transport), and 404
// everywhere else: no health endpoint, as most MCP servers.
func sdkReplica(t *testing.T, kind string) (*httptest.Server, *mcp.Server) {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "replica", Version: "1"}, nil)
	mux := http.NewServeMux()
	switch kind {
	case "stateful", "stateless":
		mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
			&mcp.StreamableHTTPOptions{Stateless: kind == "stateless"}))
	case "sse":
		mux.Handle("/sse", mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	}
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s, srv
}

// sessionsOf counts the server's open sessions.
func sessionsOf(s *mcp.Server) int {
	n := 0
	for range s.Sessions() {
		n++
	}
	return n
}

// TestProofOfRealReplicas: in the default mode a replica of the official
// SDK without a health endpoint stays up, whichever transport it speaks,
// and the checks leave no session open on it.
func TestProofOfRealReplicas(t *testing.T) {
	for _, kind := range []string{"stateful", "stateless", "sse"} {
		t.Run(kind, func(t *testing.T) {
			s, srv := sdkReplica(t, kind)
			f := newFleet(t, Spec{Name: "r", URL: s.URL + "/mcp"})
			c := newChecker(t, f, CheckOptions{Fall: 1, Rise: 1, Timeout: 2 * time.Second})
			for range 3 {
				c.Check(t.Context())
			}
			r := f.Snapshot().At(0)
			if r.State() != StateUp {
				t.Fatalf("state %v (%s), want up", r.State(), r.LastCheck().Reason)
			}
			waitFor(t, func() bool { return sessionsOf(srv) == 0 }, "the checks' sessions to end")
		})
	}
}

// waitFor waits up to 5s for cond.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 5s for %s", what)
		}
	}
}

// legacyReplica is a 2025-11-25 server that knows nothing of 2026-07-28:
// server/discover without a session is a plain-text 400, initialize opens
// a session answered on a stream (with a SEP-1699 priming event first),
// DELETE ends it.
type legacyReplica struct {
	*httptest.Server
	mu                      sync.Mutex // guards the fields below
	open                    map[string]bool
	discovers, initializes  int
	deletes, unknownDeletes int
}

func newLegacyReplica(t *testing.T) *legacyReplica {
	t.Helper()
	l := &legacyReplica{open: map[string]bool{}}
	l.Server = httptest.NewServer(http.HandlerFunc(l.serve))
	t.Cleanup(l.Close)
	return l
}

func (l *legacyReplica) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/mcp" {
		http.NotFound(w, r)
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case r.Method == http.MethodDelete:
		id := r.Header.Get("Mcp-Session-Id")
		if !l.open[id] {
			l.unknownDeletes++
			http.NotFound(w, r)
			return
		}
		delete(l.open, id)
		l.deletes++
	case r.Method != http.MethodPost:
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
	default:
		b, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(b), `"method":"initialize"`) {
			l.discovers++
			http.Error(w, "Bad Request: missing session ID", http.StatusBadRequest)
			return
		}
		l.initializes++
		id := fmt.Sprintf("s%d", l.initializes)
		l.open[id] = true
		w.Header().Set("Mcp-Session-Id", id)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "id: 0\nretry: 1000\ndata:\n\n")
		fmt.Fprint(w, `event: message`+"\n"+`data: {"jsonrpc":"2.0","id":"mcpfleet-health","result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"legacy","version":"1"}}}`+"\n\n")
	}
}

// TestProofOfALegacyReplicaDeletesItsSessions: a 2025-11-25-only replica
// is proven by initialize, each session is DELETEd, and from the second
// check on server/discover is not asked again.
func TestProofOfALegacyReplicaDeletesItsSessions(t *testing.T) {
	l := newLegacyReplica(t)
	f := newFleet(t, Spec{Name: "r", URL: l.URL + "/mcp"})
	c := newChecker(t, f, CheckOptions{Fall: 1, Rise: 1, Timeout: 2 * time.Second})
	for range 4 {
		c.Check(t.Context())
	}
	if r := f.Snapshot().At(0); r.State() != StateUp {
		t.Fatalf("state %v (%s), want up", r.State(), r.LastCheck().Reason)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.open) != 0 || l.deletes != 4 || l.unknownDeletes != 0 {
		t.Errorf("after 4 checks: %d sessions open, %d deleted, %d unknown deleted; want 0, 4, 0", len(l.open), l.deletes, l.unknownDeletes)
	}
	if l.discovers != 1 || l.initializes != 4 {
		t.Errorf("after 4 checks: %d server/discover, %d initialize; want 1 and 4", l.discovers, l.initializes)
	}
}

// TestProofRefusesWhatIsNotMCP: an endpoint that answers 404, 405, HTML or
// no JSON-RPC is down with the reason naming its URL, status and media
// type, said once in the log over several checks; a challenge proves an
// endpoint behind authorization; a draining answer drains.
func TestProofRefusesWhatIsNotMCP(t *testing.T) {
	express404 := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, "<!DOCTYPE html><html><body><pre>Cannot %s %s</pre></body></html>", r.Method, r.URL.Path)
	}
	for _, tt := range []struct {
		name   string
		h      http.HandlerFunc
		want   State
		reason string
	}{
		{"express 404", express404, StateDown, "no MCP endpoint at %s/sse (HTTP 404, text/html)"},
		{"405 everywhere", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		}, StateDown, "no MCP endpoint at %s/sse (HTTP 405, text/plain)"},
		{"health 200, no MCP", func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/health" {
				fmt.Fprint(w, `{"status":"ok"}`)
				return
			}
			express404(w, r)
		}, StateDown, "no MCP endpoint at %s/sse (HTTP 404, text/html)"},
		{"a page for every path", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html>welcome</html>")
		}, StateDown, "no MCP endpoint at %s/sse (HTTP 200, text/html)"},
		{"behind auth", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="http://x/.well-known/oauth-protected-resource"`)
			w.WriteHeader(http.StatusUnauthorized)
		}, StateUp, ""},
		{"draining", func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/health" {
				http.NotFound(w, r)
				return
			}
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"status":"draining"}`)
		}, StateDraining, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := httptest.NewServer(tt.h)
			defer s.Close()
			f := newFleet(t, Spec{Name: "r", URL: s.URL + "/sse"})
			var logs strings.Builder
			c := newChecker(t, f, CheckOptions{Fall: 1, Rise: 1, Timeout: time.Second,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			for range 3 {
				c.Check(t.Context())
			}
			r := f.Snapshot().At(0)
			if r.State() != tt.want {
				t.Fatalf("state %v (%s), want %v", r.State(), r.LastCheck().Reason, tt.want)
			}
			if tt.reason == "" {
				return
			}
			want := fmt.Sprintf(tt.reason, s.URL)
			if got := r.LastCheck().Reason; got != want {
				t.Errorf("reason %q, want %q", got, want)
			}
			if n := strings.Count(logs.String(), "no MCP endpoint"); n != 1 {
				t.Errorf("the log says %d times that there is no MCP endpoint, want once:\n%s", n, logs.String())
			}
		})
	}
}

// TestProofLogsAReasonChange: a down replica whose reason moves from a
// refused connection to "no MCP endpoint" (a wrong URL now answered) is
// logged again, once.
func TestProofLogsAReasonChange(t *testing.T) {
	ln := closedURL(t)
	f := newFleet(t, Spec{Name: "r", URL: ln})
	var logs strings.Builder
	c := newChecker(t, f, CheckOptions{Fall: 1, Rise: 1, Timeout: time.Second,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	c.Check(t.Context())
	addr := strings.TrimSuffix(strings.TrimPrefix(ln, "http://"), "/mcp")
	s := httptest.NewUnstartedServer(http.NotFoundHandler())
	l, err := listenOn(addr)
	if err != nil {
		t.Skipf("the port was taken meanwhile: %v", err)
	}
	s.Listener = l
	s.Start()
	defer s.Close()
	for range 3 {
		c.Check(t.Context())
	}
	if got := f.Snapshot().At(0).State(); got != StateDown {
		t.Fatalf("state %v, want down", got)
	}
	if n := strings.Count(logs.String(), "no MCP endpoint"); n != 1 {
		t.Errorf("the log says %d times that there is no MCP endpoint, want once:\n%s", n, logs.String())
	}
}

// listenOn listens on addr.
func listenOn(addr string) (net.Listener, error) { return net.Listen("tcp", addr) }

package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// countingReplica answers every route the gateway forwards to (the MCP
// path, the 2024-11-05 paths, a discovery document) and counts what
// reached it, by method and path.
type countingReplica struct {
	mu   sync.Mutex
	seen map[string]int // guarded by mu
}

func (c *countingReplica) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.seen[r.Method+" "+r.URL.Path]++
	c.mu.Unlock()
	switch r.URL.Path {
	case "/sse":
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: endpoint\ndata: /messages?sessionId=s1\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	case "/messages":
		w.WriteHeader(http.StatusAccepted)
	default:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}
}

// reached is how many requests reached the replica, health checks aside.
func (c *countingReplica) reached() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k, v := range c.seen {
		if !strings.HasSuffix(k, "/health") {
			n += v
		}
	}
	return n
}

// startGuarded is a gateway with opts in front of a countingReplica,
// served by wrap(gateway) on loopback.
func startGuarded(t *testing.T, opts *Options, wrap func(http.Handler) http.Handler) (*countingReplica, string) {
	t.Helper()
	rep := &countingReplica{seen: map[string]int{}}
	hs := httptest.NewServer(rep)
	t.Cleanup(hs.Close)
	gw := startGatewayOn(t, []upstream.Spec{{Name: "r", URL: hs.URL + "/mcp"}}, opts, io.Discard)
	var h http.Handler = gw
	if wrap != nil {
		h = wrap(gw)
	}
	front := newFront(h)
	t.Cleanup(front.Close)
	return rep, front.URL
}

// do sends one request with host (when not "") and origin (when not "")
// and returns its status and body.
func do(t *testing.T, method, url, host, origin, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp.StatusCode, "" // a stream: its status is the answer
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// messagesURL opens a 2024-11-05 stream through the gateway and returns
// the messages URL of its endpoint event; the stream ends with the test.
func messagesURL(t *testing.T, base string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/sse", nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			return base + data
		}
	}
	t.Fatalf("no endpoint event (status %d)", resp.StatusCode)
	return ""
}

const pingBody = `{"jsonrpc":"2.0","id":1,"method":"ping"}`

// TestOriginOnEveryRoute: an Origin of another site gets 403 with a
// JSON-RPC error on the MCP path, both 2024-11-05 paths and a passthrough
// path, and nothing reaches the replica; no Origin, the request's own
// origin and an allowed one are served.
func TestOriginOnEveryRoute(t *testing.T) {
	rep, base := startGuarded(t, &Options{AllowedOrigins: []string{"https://app.example.com"}}, nil)
	msgs := messagesURL(t, base)
	own := "http://" + strings.TrimPrefix(base, "http://")
	routes := []struct{ name, method, url, body string }{
		{"mcp", http.MethodPost, base + "/mcp", pingBody},
		{"sse", http.MethodGet, base + "/sse", ""},
		{"messages", http.MethodPost, msgs, pingBody},
		{"passthrough", http.MethodGet, base + "/.well-known/oauth-protected-resource", ""},
	}
	for _, rt := range routes {
		t.Run(rt.name, func(t *testing.T) {
			for _, evil := range []string{"http://evil.example", "null", own + ".evil.example", "http://127.0.0.1:1", own + "/"} {
				before := rep.reached()
				code, body := do(t, rt.method, rt.url, "", evil, rt.body)
				if code != http.StatusForbidden {
					t.Fatalf("Origin %s: status %d %s, want 403", evil, code, body)
				}
				var e struct {
					JSONRPC string `json:"jsonrpc"`
					Error   struct {
						Code    int    `json:"code"`
						Message string `json:"message"`
					} `json:"error"`
				}
				if err := json.Unmarshal([]byte(body), &e); err != nil || e.JSONRPC != "2.0" || e.Error.Message != "origin not allowed" {
					t.Errorf("Origin %s: body %s, want a JSON-RPC error (%v)", evil, body, err)
				}
				if n := rep.reached() - before; n != 0 {
					t.Errorf("Origin %s: %d requests reached the replica", evil, n)
				}
			}
			for _, ok := range []string{"", own, "https://app.example.com"} {
				before := rep.reached()
				if code, body := do(t, rt.method, rt.url, "", ok, rt.body); code >= 400 {
					t.Fatalf("Origin %q: status %d %s", ok, code, body)
				}
				if rep.reached() == before {
					t.Errorf("Origin %q: nothing reached the replica", ok)
				}
			}
		})
	}
}

// TestAllowedHostsOnAPublicListener: on a listener on every address,
// allowed_hosts pins the names; another Host gets 403 and reaches nothing,
// while the probes' /healthz and /readyz answer whatever the Host.
func TestAllowedHostsOnAPublicListener(t *testing.T) {
	public := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// As if the request had arrived on a public address (RFC 5737
			// documentation range); nothing is sent there.
			ctx := context.WithValue(r.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 8080})
			h.ServeHTTP(w, r.WithContext(ctx))
		})
	}
	t.Run("default takes any host", func(t *testing.T) {
		_, base := startGuarded(t, nil, public)
		if code, body := do(t, http.MethodPost, base+"/mcp", "anything.example", "", pingBody); code != http.StatusOK {
			t.Fatalf("status %d %s", code, body)
		}
	})
	rep, base := startGuarded(t, &Options{AllowedHosts: []string{"mcp.example.com"}}, public)
	for _, host := range []string{"other.example.com", "192.0.2.1:8080", "localhost", "mcp.example.com.evil.example"} {
		code, body := do(t, http.MethodPost, base+"/mcp", host, "", pingBody)
		if code != http.StatusForbidden || !strings.Contains(body, "host not allowed") {
			t.Errorf("Host %s: status %d %s, want 403", host, code, body)
		}
	}
	if n := rep.reached(); n != 0 {
		t.Fatalf("%d requests reached the replica", n)
	}
	for _, host := range []string{"mcp.example.com", "MCP.example.com:443"} {
		if code, body := do(t, http.MethodPost, base+"/mcp", host, "", pingBody); code != http.StatusOK {
			t.Errorf("Host %s: status %d %s", host, code, body)
		}
	}
	if code, body := do(t, http.MethodPost, base+"/mcp", "mcp.example.com", "https://mcp.example.com", pingBody); code != http.StatusOK {
		t.Errorf("the pinned host's own origin: status %d %s", code, body)
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		if code, body := do(t, http.MethodGet, base+p, "192.0.2.7:8080", "", ""); code != http.StatusOK {
			t.Errorf("%s with the pod's address as Host: status %d %s", p, code, body)
		}
	}
}

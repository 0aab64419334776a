package admin

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/hostmatch"
)

const edgeToken = "0123456789abcdef-admin-token"

// serveListener serves the whole admin listener: the fleet view behind
// token, and l's own routes, behind a Strict guard.
func serveListener(t *testing.T, src Source, l Listener) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	Register(mux, src, &Options{Token: l.Token})
	l.Metrics = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("mcpfleet_up 1\n")) })
	srv := httptest.NewServer(l.Serve(mux))
	t.Cleanup(srv.Close)
	return srv
}

var withToken = map[string]string{"Authorization": "Bearer " + edgeToken}

// TestTokenGuardsEveryRoute: with a token, /api/fleet, the actions and
// the profiles need it; /metrics needs it only when closed; the profiles
// are off unless asked for.
func TestTokenGuardsEveryRoute(t *testing.T) {
	for _, open := range []bool{true, false} {
		src := newFake("a", "b")
		srv := serveListener(t, src, Listener{Token: edgeToken, MetricsOpen: open, Pprof: true})
		routes := []struct {
			method, path string
			open         bool
		}{
			{http.MethodGet, "/api/fleet", false},
			{http.MethodPost, "/api/replicas/a/drain", false},
			{http.MethodPost, "/api/replicas/a/resume", false},
			{http.MethodGet, "/debug/pprof/", false},
			{http.MethodGet, "/debug/pprof/goroutine?debug=2", false},
			{http.MethodGet, "/debug/pprof/symbol", false},
			{http.MethodGet, "/metrics", open},
			{http.MethodGet, "/", true}, // the page holds no data
		}
		for _, rt := range routes {
			held := src.isHeld("a")
			code, b := send(t, rt.method, srv.URL+rt.path, nil)
			if want := map[bool]int{true: http.StatusOK, false: http.StatusUnauthorized}[rt.open]; code != want {
				t.Errorf("metrics open %v: %s %s without the token: %d %s, want %d", open, rt.method, rt.path, code, b, want)
			}
			if src.isHeld("a") != held {
				t.Fatalf("%s %s without the token changed a replica", rt.method, rt.path)
			}
			if code, b := send(t, rt.method, srv.URL+rt.path, withToken); code != http.StatusOK {
				t.Errorf("metrics open %v: %s %s with the token: %d %s", open, rt.method, rt.path, code, b)
			}
		}
	}
	srv := serveListener(t, newFake("a"), Listener{Token: edgeToken, MetricsOpen: true})
	if code, _ := send(t, http.MethodGet, srv.URL+"/debug/pprof/goroutine?debug=2", withToken); code != http.StatusNotFound {
		t.Errorf("profiles without admin_pprof: %d, want 404", code)
	}
	// Without a token the profiles are never served (serve refuses the
	// configuration; this is the handler's own floor).
	srv = serveListener(t, newFake("a"), Listener{MetricsOpen: true, Pprof: true})
	if code, _ := send(t, http.MethodGet, srv.URL+"/debug/pprof/", map[string]string{"Authorization": "Bearer "}); code != http.StatusUnauthorized {
		t.Errorf("profiles with no token configured: %d, want 401", code)
	}
}

// TestRebindingShapedDrainIsRefused: a page that rebound its own name to
// the admin listener sends that name as Host and as Origin; the drain is
// 403 even with the token (a browser would not have it, but a rebinding
// page might find it in a URL), and nothing changes.
func TestRebindingShapedDrainIsRefused(t *testing.T) {
	src := newFake("a", "b")
	srv := serveListener(t, src, Listener{Token: edgeToken, MetricsOpen: true})
	evil := "evil.example:9090"
	for _, hdr := range []map[string]string{
		{"Host": evil, "Origin": "http://" + evil},
		{"Host": evil, "Origin": "http://" + evil, "Authorization": withToken["Authorization"]},
		{"Host": evil},
		{"Origin": "http://" + evil},
		{"Origin": "http://" + evil, "Authorization": withToken["Authorization"]},
	} {
		for _, path := range []string{"/api/replicas/a/drain", "/metrics"} {
			method := http.MethodPost
			if path == "/metrics" {
				method = http.MethodGet
			}
			code, b := sendHost(t, method, srv.URL+path, hdr)
			if code != http.StatusForbidden || src.isHeld("a") {
				t.Errorf("%s %s with %v: %d %s, held %v; want 403 and nothing changed", method, path, hdr, code, b, src.isHeld("a"))
			}
		}
	}
	// The listener's own address, a loopback name and a name the operator
	// allows are served.
	hosts := []string{strings.TrimPrefix(srv.URL, "http://"), "localhost:9090"}
	for _, h := range hosts {
		if code, b := sendHost(t, http.MethodGet, srv.URL+"/api/fleet", map[string]string{"Host": h, "Authorization": withToken["Authorization"]}); code != http.StatusOK {
			t.Errorf("Host %s: %d %s", h, code, b)
		}
	}
	pinned := serveListener(t, src, Listener{Token: edgeToken, Guard: &hostmatch.Guard{Strict: true, Hosts: []string{"admin.example.com"}}})
	hdr := map[string]string{"Host": "admin.example.com", "Origin": "https://admin.example.com", "Authorization": withToken["Authorization"]}
	if code, b := sendHost(t, http.MethodGet, pinned.URL+"/api/fleet", hdr); code != http.StatusOK {
		t.Errorf("an allowed host and its own origin: %d %s", code, b)
	}
}

// sendHost is send, with the Host header taken from hdr["Host"].
func sendHost(t *testing.T, method, url string, hdr map[string]string) (int, []byte) {
	t.Helper()
	h := map[string]string{}
	host := ""
	for k, v := range hdr {
		if k == "Host" {
			host = v
			continue
		}
		h[k] = v
	}
	if host == "" {
		return send(t, method, url, h)
	}
	return sendWith(t, method, url, h, func(r *http.Request) { r.Host = host })
}

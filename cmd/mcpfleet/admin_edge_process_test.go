package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testproc"
)

// TestServeRefusesAPublicAdminWithoutAToken: an admin listener on every
// address without admin_token_file does not start (nothing listens), and
// the error says how to make a token.
func TestServeRefusesAPublicAdminWithoutAToken(t *testing.T) {
	free := testproc.FreeAddr(t)
	port := free[strings.LastIndexByte(free, ':'):] // never listened on: serve refuses first
	for _, addr := range []string{"0.0.0.0" + port, port, "[::]" + port} {
		var out, errb lockedBuffer
		code := run(context.Background(), []string{"serve", "--listen", testproc.FreeAddr(t), "--admin", addr, "--upstream", "http://127.0.0.1:9/mcp"}, &out, &errb)
		if code != 2 {
			t.Errorf("--admin %s: exit %d, want 2 (refused): %s", addr, code, errb.String())
		}
		for _, want := range []string{"admin_token_file", "head -c 32 /dev/urandom"} {
			if !strings.Contains(errb.String(), want) {
				t.Errorf("--admin %s: the error does not name %q: %s", addr, want, errb.String())
			}
		}
		if strings.Contains(out.String(), "serving") {
			t.Errorf("--admin %s: serve started: %s", addr, out.String())
		}
	}
}

// TestAdminListenerEdge: through a serve process with a token, the fleet
// API needs it, /metrics is open, the profiles are off, and a drain shaped
// like DNS rebinding (Host and Origin both the attacker's) is 403 and
// drains nothing, token or not.
func TestAdminListenerEdge(t *testing.T) {
	f := startAdminFleet(t, 1)
	adm := f.admins[0]
	get := func(path string, hdr map[string]string, host string) int {
		t.Helper()
		method := http.MethodGet
		if strings.HasSuffix(path, "/drain") {
			method = http.MethodPost
		}
		req, _ := http.NewRequest(method, adm+path, nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	tok := map[string]string{"Authorization": "Bearer " + f.token}
	for _, c := range []struct {
		path string
		hdr  map[string]string
		host string
		want int
	}{
		{"/api/fleet", nil, "", http.StatusUnauthorized},
		{"/api/replicas/a/drain", nil, "", http.StatusUnauthorized},
		{"/metrics", nil, "", http.StatusOK},
		{"/debug/pprof/goroutine?debug=2", tok, "", http.StatusNotFound},
		{"/api/replicas/a/drain", map[string]string{"Origin": "http://evil.example:9090", "Authorization": tok["Authorization"]}, "evil.example:9090", http.StatusForbidden},
		{"/api/replicas/a/drain", map[string]string{"Origin": "http://evil.example:9090", "Authorization": tok["Authorization"]}, "", http.StatusForbidden},
		{"/api/fleet", tok, "", http.StatusOK},
	} {
		if got := get(c.path, c.hdr, c.host); got != c.want {
			t.Errorf("%s (headers %v, Host %q): %d, want %d", c.path, c.hdr, c.host, got, c.want)
		}
	}
	for _, r := range f.fleetView(t, adm).Replicas {
		if r.Held {
			t.Errorf("replica %s was drained", r.Name)
		}
	}
}

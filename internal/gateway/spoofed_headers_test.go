package gateway

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfleet/mcpfleet/internal/identity"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// spoofing are the fields a hostile client sends to pass for someone else,
// somewhere else; none of its values may reach a replica.
var spoofing = map[string]string{
	"X-Forwarded-For":        "6.6.6.6",
	"Forwarded":              "for=6.6.6.6;host=evil.example;proto=https",
	"X-Real-IP":              "6.6.6.6",
	"True-Client-IP":         "6.6.6.6",
	"X-Client-IP":            "6.6.6.6",
	"X-Forwarded-Prefix":     "/admin",
	"X-Forwarded-Port":       "6666",
	"X-Forwarded-Server":     "evil.example",
	"X-Forwarded-Host":       "evil.example",
	"X-Forwarded-Proto":      "https",
	"X-Original-URL":         "/admin",
	"X-Rewrite-URL":          "/admin",
	"X-HTTP-Method-Override": "DELETE",
	"HTTP2-Settings":         "AAMAAABkAARAAAAAAAIAAAAA",
}

// headerRecorder is a replica that keeps the header of every request it
// gets and answers each with a small JSON document.
func headerRecorder(t *testing.T) (*httptest.Server, <-chan http.Header) {
	t.Helper()
	got := make(chan http.Header, 16)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		got <- r.Header.Clone()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	t.Cleanup(s.Close)
	return s, got
}

// TestSpoofedHeadersNeverReachReplicas: whatever a client says of its
// address, scheme, host, path or method, on the MCP path and on a
// passthrough path, the replica hears only the gateway's own
// X-Forwarded-For, Forwarded, X-Forwarded-Host and -Proto: the real peer,
// or behind trusted proxies the chain they vouch for.
func TestSpoofedHeadersNeverReachReplicas(t *testing.T) {
	xff, err := identity.NewProxies([]string{"127.0.0.0/8", "10.0.0.0/8"}, "X-Forwarded-For")
	if err != nil {
		t.Fatal(err)
	}
	realIP, err := identity.NewProxies([]string{"127.0.0.0/8"}, "X-Real-IP")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		proxies *identity.Proxies
		extra   map[string]string // over spoofing
		wantXFF string
		wantFor string // Forwarded's for= elements, before the gateway's host and proto
	}{
		{"nobody trusted", nil, nil, "127.0.0.1", "for=127.0.0.1"},
		{"trusted peer", xff, map[string]string{"X-Forwarded-For": "6.6.6.6, 198.51.100.7, 10.0.0.2"},
			"198.51.100.7, 10.0.0.2, 127.0.0.1", "for=198.51.100.7, for=10.0.0.2, for=127.0.0.1"},
		{"trusted X-Real-IP", realIP, map[string]string{"X-Real-IP": "198.51.100.7"},
			"198.51.100.7, 127.0.0.1", "for=198.51.100.7, for=127.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			backend, got := headerRecorder(t)
			gw := startGatewayOn(t, []upstream.Spec{{Name: "b", URL: backend.URL + "/mcp"}},
				&Options{Proxies: tt.proxies}, io.Discard)
			front := newFront(gw)
			defer front.Close()
			host := strings.TrimPrefix(front.URL, "http://")
			for _, path := range []string{"/mcp", "/.well-known/oauth-protected-resource"} {
				method, body := http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"ping"}`
				if path != "/mcp" {
					method, body = http.MethodGet, ""
				}
				req, _ := http.NewRequest(method, front.URL+path, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-Custom", "kept")
				for k, v := range spoofing {
					req.Header.Set(k, v)
				}
				for k, v := range tt.extra {
					req.Header.Set(k, v)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("%s %s: status %d", method, path, resp.StatusCode)
				}
				h := <-got
				want := http.Header{
					"X-Forwarded-For":   {tt.wantXFF},
					"Forwarded":         {tt.wantFor + `;host="` + host + `";proto=http`},
					"X-Forwarded-Host":  {host},
					"X-Forwarded-Proto": {"http"},
					"X-Custom":          {"kept"},
				}
				for k := range spoofing {
					k = http.CanonicalHeaderKey(k)
					if _, own := want[k]; !own && h[k] != nil {
						t.Errorf("%s: the replica got the client's %s: %q", path, k, h[k])
					}
				}
				for k := range want {
					if diff := cmp.Diff(want[k], h[k]); diff != "" {
						t.Errorf("%s: %s (-want +got):\n%s", path, k, diff)
					}
				}
				for k, vv := range h {
					if v := strings.Join(vv, ","); strings.Contains(v, "6.6.6.6") || strings.Contains(v, "evil.example") || strings.Contains(v, "/admin") {
						t.Errorf("%s: the replica got %s: %q", path, k, v)
					}
				}
			}
		})
	}
}

// TestFieldWritersAgree: the lean forwarder's field bytes and net/http's
// header map (TLS replicas) say the same, for IPv6 peers and hosts that
// cannot be quoted too.
func TestFieldWritersAgree(t *testing.T) {
	trusted, err := identity.NewProxies([]string{"2001:db8::/32"}, "X-Forwarded-For")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name          string
		proxies       *identity.Proxies
		remote, host  string
		header        map[string]string
		wantForwarded string // "" means none
	}{
		{"ipv4 without Forwarded", nil, "192.0.2.1:5000", "mcp.example", map[string]string{"X-Real-IP": "6.6.6.6"}, ""},
		{"ipv6 peer quoted", nil, "[2001:db8::1]:443", "mcp.example:8443", map[string]string{"Forwarded": "for=6.6.6.6"},
			`for="[2001:db8::1]";host="mcp.example:8443";proto=http`},
		{"trusted ipv6 chain", trusted, "[2001:db8::1]:443", "mcp.example",
			map[string]string{"Forwarded": "for=x", "X-Forwarded-For": "6.6.6.6, 192.0.2.7, 2001:db8::2"},
			`for=192.0.2.7, for="[2001:db8::2]", for="[2001:db8::1]";host="mcp.example";proto=http`},
		{"host with a quote left out", nil, "192.0.2.1:5000", `a"b`, map[string]string{"Forwarded": "for=x"},
			`for=192.0.2.1;proto=http`},
		{"unparseable peer names no one", nil, "@", "mcp.example", map[string]string{"Forwarded": "for=x", "X-Forwarded-For": "6.6.6.6"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := httptest.NewRequest(http.MethodPost, "http://"+tt.host+"/mcp", nil)
			in.RemoteAddr, in.Host = tt.remote, tt.host
			for k, v := range tt.header {
				in.Header.Set(k, v)
			}
			in.Header.Set("Mcp-Session-Id", "client")
			viaMap := http.Header{}
			copyRequestHeader(viaMap, in, tt.proxies)
			viaMap.Set("Mcp-Session-Id", "replica")
			raw := appendFields(nil, in, "replica", tt.proxies)
			viaBytes, err := textproto.NewReader(bufio.NewReader(bytes.NewReader(append(raw, '\r', '\n')))).ReadMIMEHeader()
			if err != nil {
				t.Fatalf("reading %q: %v", raw, err)
			}
			if diff := cmp.Diff(viaMap, http.Header(viaBytes)); diff != "" {
				t.Errorf("(-map +bytes):\n%s", diff)
			}
			if got := viaMap.Get("Forwarded"); got != tt.wantForwarded {
				t.Errorf("Forwarded %q, want %q", got, tt.wantForwarded)
			}
		})
	}
}

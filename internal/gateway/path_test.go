package gateway

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mcpfleet/mcpfleet/internal/upstream"
	"github.com/prometheus/client_golang/prometheus"
)

// ambiguousTargets are request targets that read as another path to
// someone: dot-segments plain, encoded in either case, encoded twice or
// thrice, with servlet parameters, in overlong UTF-8; encoded slashes and
// backslashes; a NUL. HOST is replaced by the gateway's address.
var ambiguousTargets = []string{
	"/.well-known/oauth-protected-resource/../../admin",
	"/.well-known/oauth-protected-resource/..",
	"/.well-known/oauth-protected-resource/.",
	"/oauth/../mcp",
	"/oauth/./mcp",
	"/oauth/%2e%2e/mcp",
	"/oauth/%2E%2E/mcp",
	"/oauth/%2e%2E/mcp",
	"/oauth/%2e./mcp",
	"/oauth/.%2E/mcp",
	"/oauth/%2e/mcp",
	"/./mcp",
	"/..",
	"/%2e%2e",
	"//..",
	"/mcp/.",
	"/mcp/..",
	"/mcp/%2E",
	"/mcp/..?sessionId=x",
	"/messages/../mcp?sessionId=x",
	"/sse/%2e%2e/mcp",
	"/healthz/..",
	"/.well-known/oauth-protected-resource/%2e%2e%2f%2e%2e%2fadmin",
	"/.well-known/oauth-protected-resource%2f..%2f..%2fadmin",
	"/.well-known/oauth-protected-resource/..%2fadmin",
	"/.well-known/oauth-protected-resource/%2fadmin",
	"/.well-known/oauth-protected-resource/%2Fadmin",
	"/mcp%2f",
	`/.well-known/oauth-protected-resource\..\admin`,
	`/.well-known/oauth-protected-resource/..\admin`,
	`/oauth\token`,
	"/.well-known/oauth-protected-resource/%5c..%5cadmin",
	"/.well-known/oauth-protected-resource/%5C..%5Cadmin",
	"/.well-known/oauth-protected-resource/%252e%252e/admin",
	"/.well-known/oauth-protected-resource/%252E%252E/admin",
	"/.well-known/oauth-protected-resource/%252f",
	"/.well-known/oauth-protected-resource/%255c",
	"/.well-known/oauth-protected-resource/%25252e%25252e/admin",
	"/.well-known/oauth-protected-resource/..;/admin",
	"/.well-known/oauth-protected-resource/.;x/admin",
	"/.well-known/oauth-protected-resource/%2e%2e;/admin",
	"/.well-known/oauth-protected-resource/%c0%ae%c0%ae/admin",
	"/.well-known/oauth-protected-resource/%c0%af",
	"/.well-known/oauth-protected-resource/%e0%80%ae%e0%80%ae/admin",
	"/.well-known/oauth-protected-resource/%00/admin",
	"http://HOST/oauth/../mcp",
	"http://HOST/.well-known/oauth-protected-resource/%2e%2e/admin",
}

// plainTargets are paths that only look odd: every one is served.
var plainTargets = []string{
	"/.well-known/oauth-protected-resource",
	"/.well-known/oauth-protected-resource/mcp",
	"/oauth/token",
	"/oauth/...",
	"/oauth/.x",
	"/oauth/x..",
	"/oauth/%7euser",
	"/oauth/a%20b",
	"/oauth/%e2%82%ac",
	"/oauth/;x",
}

func TestAmbiguousPath(t *testing.T) {
	if len(ambiguousTargets) < 30 {
		t.Fatalf("%d spellings; the corpus wants at least 30", len(ambiguousTargets))
	}
	for _, target := range ambiguousTargets {
		r := httptest.NewRequest(http.MethodGet, strings.Replace(target, "HOST", "gw", 1), nil)
		if !ambiguousPath(requestPath(r)) {
			t.Errorf("%q passes", target)
		}
	}
	for _, target := range plainTargets {
		r := httptest.NewRequest(http.MethodGet, target, nil)
		if ambiguousPath(requestPath(r)) {
			t.Errorf("%q is refused", target)
		}
	}
}

// TestAmbiguousPathsRefused: behind both servers the gateway runs on (and
// net/http's over HTTP/2), each spelling gets 400 and no replica hears of it, on the MCP path, the OAuth
// discovery documents, a configured passthrough prefix and the rest; the
// plain paths reach the replica.
func TestAmbiguousPathsRefused(t *testing.T) {
	var hits atomic.Int32
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{}`)
	}))
	defer backend.Close()
	gw := startGatewayOn(t, []upstream.Spec{{Name: "b", URL: backend.URL + "/mcp"}},
		&Options{PassthroughPaths: []string{"/oauth/"}}, io.Discard)
	t.Run("h2", func(t *testing.T) {
		mcpURL, client := startH2Front(t, gw)
		u, _ := url.Parse(mcpURL)
		for _, target := range append(ambiguousTargets, plainTargets...) {
			if !strings.HasPrefix(target, "/") || strings.HasPrefix(target, "//") {
				continue // absolute form is HTTP/1.1's; Go's client reads "//x" as an authority
			}
			want := http.StatusBadRequest
			if slices.Contains(plainTargets, target) {
				want = http.StatusOK
			}
			// Opaque goes out as :path byte for byte.
			req := &http.Request{Method: http.MethodGet, Header: http.Header{},
				URL: &url.URL{Scheme: u.Scheme, Host: u.Host, Opaque: target}}
			before := hits.Load()
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("%q: %v", target, err)
			}
			resp.Body.Close()
			if resp.ProtoMajor != 2 || resp.StatusCode != want || (want == http.StatusBadRequest) != (hits.Load() == before) {
				t.Errorf("%q over HTTP/%d: status %d, replica hits %d; want %d", target, resp.ProtoMajor, resp.StatusCode, hits.Load()-before, want)
			}
		}
	})
	for _, server := range []string{"h1", "std"} {
		t.Run(server, func(t *testing.T) {
			front := newFrontOn(server, gw)
			defer front.Close()
			host := strings.TrimPrefix(front.URL, "http://")
			for _, target := range ambiguousTargets {
				before := hits.Load()
				if status := targetStatus(t, host, strings.Replace(target, "HOST", host, 1)); status != http.StatusBadRequest {
					t.Errorf("%q: status %d, want 400", target, status)
				}
				if n := hits.Load() - before; n != 0 {
					t.Errorf("%q reached the replica", target)
				}
			}
			for _, target := range plainTargets {
				before := hits.Load()
				if status := targetStatus(t, host, target); status != http.StatusOK || hits.Load() != before+1 {
					t.Errorf("%q: status %d, replica hits %d; want 200 from the replica", target, status, hits.Load()-before)
				}
			}
		})
	}
}

// TestAmbiguousPathsBeforeServices: a path that could climb from one
// service's prefix into another's is refused before a service is picked.
func TestAmbiguousPathsBeforeServices(t *testing.T) {
	reg := prometheus.NewRegistry()
	list := []Service{
		{Name: "github", Gateway: serviceGateway(t, "github", reg, Options{Path: "/github/mcp", PassthroughPaths: []string{"/github/oauth/"}})},
		{Name: "jira", Gateway: serviceGateway(t, "jira", reg, Options{Path: "/jira/mcp"})},
	}
	h := NewServices(list, false)
	for _, target := range []string{"/github/oauth/../../jira/mcp", "/github/oauth/%2e%2e/%2E%2E/jira/mcp", "/github/oauth%2f..%2f..%2fjira/mcp", `/github/oauth/..\..\jira/mcp`} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
		if rec.Code != http.StatusBadRequest {
			t.Errorf("%q: %d, want 400", target, rec.Code)
		}
	}
}

// targetStatus sends GET target over a fresh connection, byte for byte as
// written (a client library would clean or escape it), and returns the
// answer's status.
func targetStatus(t *testing.T, host, target string) int {
	t.Helper()
	c, err := net.DialTimeout("tcp", host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target, host)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%q: reading the answer: %v", target, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// FuzzAmbiguousPath holds ambiguousPath to a plain reading of its rule
// (split, decode with a replacer until nothing changes, look), and a path
// it lets through to net/url: decoded, it holds no dot-segment and no
// backslash, and has the slashes it was written with.
func FuzzAmbiguousPath(f *testing.F) {
	for _, s := range append(append([]string{}, ambiguousTargets...), plainTargets...) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		p, _, _ = strings.Cut(p, "?") // a path, as requestPath gives it
		got := ambiguousPath(p)
		if want := referenceAmbiguous(p); got != want {
			t.Fatalf("ambiguousPath(%q) = %v, the reference says %v", p, got, want)
		}
		if got {
			return
		}
		u, err := url.ParseRequestURI("/" + p)
		if err != nil {
			return
		}
		for _, seg := range strings.Split(u.Path, "/") {
			if seg == "." || seg == ".." {
				t.Fatalf("%q passed but decodes to %q", p, u.Path)
			}
		}
		if strings.Contains(u.Path, `\`) || strings.Count(u.Path, "/") != strings.Count("/"+p, "/") {
			t.Fatalf("%q passed but decodes to %q", p, u.Path)
		}
	})
}

// unescaper decodes every %XX, in either case, in one pass.
var unescaper = func() *strings.Replacer {
	var pairs []string
	for c := 0; c < 256; c++ {
		hex := fmt.Sprintf("%02x", c)
		for _, hi := range []string{hex[:1], strings.ToUpper(hex[:1])} {
			for _, lo := range []string{hex[1:], strings.ToUpper(hex[1:])} {
				pairs = append(pairs, "%"+hi+lo, string([]byte{byte(c)}))
			}
		}
	}
	return strings.NewReplacer(pairs...)
}()

// referenceAmbiguous is ambiguousPath's rule read plainly.
func referenceAmbiguous(p string) bool {
	if strings.Contains(p, `\`) {
		return true
	}
	for _, seg := range strings.Split(p, "/") {
		dec := seg
		for i := 0; ; i++ {
			next := unescaper.Replace(dec)
			if next == dec {
				break
			}
			if i == maxUnescapes {
				return true
			}
			dec = next
		}
		name, _, _ := strings.Cut(dec, ";")
		if name == "." || name == ".." || strings.ContainsAny(dec, "/\\\x7f") || !utf8.ValidString(dec) {
			return true
		}
		for _, c := range []byte(dec) {
			if c < ' ' {
				return true
			}
		}
	}
	return false
}

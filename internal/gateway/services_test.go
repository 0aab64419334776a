package gateway

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/upstream"
	"github.com/prometheus/client_golang/prometheus"
)

// serviceGateway is a gateway for one service on a replica that is never
// dialled (the tests here stop at the router).
func serviceGateway(t *testing.T, name string, reg *prometheus.Registry, opts Options) *Gateway {
	t.Helper()
	opts.Service, opts.Registry = name, reg
	return startGatewayOn(t, []upstream.Spec{{Name: name + "-1", URL: "http://127.0.0.1:1/mcp"}}, &opts, io.Discard)
}

// TestPickService: a request goes to the service whose hosts take its
// Host and that owns its path; an OAuth document to the service its
// suffix names (the root one to the default); anything else to none.
func TestPickService(t *testing.T) {
	reg := prometheus.NewRegistry()
	gh := serviceGateway(t, "github", reg, Options{Path: "/github/mcp", PassthroughPaths: []string{"/github/files/"}, NoSSE: true})
	jira := serviceGateway(t, "jira", reg, Options{Path: "/jira/mcp", SSEPath: "/jira/sse", SSEMessagesPath: "/jira/messages"})
	in := serviceGateway(t, "internal", reg, Options{NoSSE: true})
	corp := serviceGateway(t, "corp", reg, Options{NoSSE: true})
	list := []Service{
		{Name: "github", Gateway: gh},
		{Name: "jira", Gateway: jira},
		{Name: "internal", Hosts: []string{"mcp.internal.example"}, Default: true, Gateway: in},
		{Name: "corp", Hosts: []string{"*.corp.example"}, Gateway: corp},
	}
	tests := []struct{ host, path, want string }{
		{"gw.example", "/github/mcp", "github"},
		{"gw.example", "/github/files/a/b", "github"},
		{"gw.example", "/jira/mcp", "jira"},
		{"gw.example", "/jira/sse", "jira"},
		{"gw.example", "/jira/messages", "jira"},
		{"mcp.internal.example", "/mcp", "internal"},
		{"a.corp.example", "/mcp", "corp"},
		{"mcp.internal.example", "/github/mcp", "github"}, // github takes every host
		{"a.b.corp.example", "/mcp", ""},                  // one label only
		{"corp.example", "/mcp", ""},
		{"gw.example", "/mcp", ""},
		{"gw.example", "/github/mcp/", ""},
		{"gw.example", "/sse", ""},
		{"gw.example", "/.well-known/oauth-protected-resource/github/mcp", "github"},
		{"gw.example", "/.well-known/oauth-authorization-server/jira/mcp", "jira"},
		{"mcp.internal.example", "/.well-known/oauth-protected-resource/mcp", "internal"},
		{"x.corp.example", "/.well-known/oauth-protected-resource/mcp", "corp"},
		{"gw.example", "/.well-known/oauth-protected-resource/mcp", ""},
		{"gw.example", "/.well-known/oauth-protected-resource", "internal"},
		{"gw.example", "/.well-known/oauth-protected-resourcex", ""},
		{"gw.example", "/.well-known/oauth-protected-resource/other/mcp", ""},
	}
	for _, tt := range tests {
		got := ""
		if s := pickService(list, tt.host, tt.path); s != nil {
			got = s.Name
		}
		if got != tt.want {
			t.Errorf("%s%s: %q, want %q", tt.host, tt.path, got, tt.want)
		}
	}
	if s := pickService(list[:2], "gw.example", "/.well-known/oauth-protected-resource"); s != nil {
		t.Errorf("the root document without a default service went to %s", s.Name)
	}
}

// TestServicesReadyzAndNotFound: /readyz is ready when every service is
// (or, with readyAny, one), naming the first that is not; a request for
// no service is the gateway's own 404; the metrics carry each service.
func TestServicesReadyzAndNotFound(t *testing.T) {
	reg := prometheus.NewRegistry()
	gh := serviceGateway(t, "github", reg, Options{Path: "/github/mcp"})
	jira := serviceGateway(t, "jira", reg, Options{Path: "/jira/mcp", NoSSE: true})
	list := []Service{{Name: "github", Gateway: gh}, {Name: "jira", Gateway: jira}}
	get := func(h http.Handler, path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+path, nil))
		return rec.Code, rec.Body.String()
	}
	all, anyOne := NewServices(list, false), NewServices(list, true)
	if code, body := get(all, "/readyz"); code != http.StatusOK {
		t.Fatalf("both up: %d %s", code, body)
	}
	jira.fleet.Snapshot().At(0).SetHeld(true)
	if code, body := get(all, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "service jira: no replica can take new work") {
		t.Errorf("jira without a replica, services_ready all: %d %s", code, body)
	}
	if code, body := get(anyOne, "/readyz"); code != http.StatusOK {
		t.Errorf("jira without a replica, services_ready any: %d %s", code, body)
	}
	gh.SetDraining()
	if code, body := get(anyOne, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "draining") {
		t.Errorf("draining: %d %s", code, body)
	}
	if code, _ := get(all, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d", code)
	}
	if code, body := get(all, "/other/mcp"); code != http.StatusNotFound || !strings.Contains(body, "404 page not found") {
		t.Errorf("no service's path: %d %s", code, body)
	}
	// One request to jira's endpoint (refused: a GET without a session),
	// counted under its service only.
	get(all, "/jira/mcp")
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range fams {
		if f.GetName() != "mcpfleet_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if label(m, "service") != "jira" {
				t.Errorf("a request to jira counted as service %q", label(m, "service"))
			}
			found = true
		}
	}
	if !found {
		t.Error("no mcpfleet_requests_total sample with a service label")
	}
	all.Set(list[:1])
	if code, _ := get(all, "/jira/mcp"); code != http.StatusNotFound {
		t.Errorf("jira after Set without it: %d, want 404", code)
	}
}

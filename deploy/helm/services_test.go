package helm

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/config"
	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
)

// exampleDNS is the example replicas' headless Service, as the default
// release's gateways resolve it.
const exampleDNS = "mcpfleet-example.mcp.svc.cluster.local"

// topLevel returns the rendered configuration's top-level keys.
func topLevel(t *testing.T, g gateway) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(g.text), &m); err != nil {
		t.Fatalf("the configuration: %v", err)
	}
	return m
}

// byName returns the resolved services by name, in their order.
func byName(t *testing.T, c config.Config, want ...string) map[string]config.Service {
	t.Helper()
	ss := fleets(t, c)
	var names []string
	out := map[string]config.Service{}
	for _, s := range ss {
		names = append(names, s.Name)
		out[s.Name] = s
	}
	if !slices.Equal(names, want) {
		t.Fatalf("services %q, want %q", names, want)
	}
	return out
}

// TestServices renders three services, two chosen by path and one by host,
// each its own fleet, and checks the configuration as serve resolves it:
// config.Parse has validated it (services, overlaps and every service's
// own keys over the top level), and each service has the replicas, paths,
// hosts and keys its values give, the top level's keys as its defaults.
func TestServices(t *testing.T) {
	r := mustRender(t, renderOptions{files: []string{"services.yaml"}})
	checkRelease(t, r)
	g := gatewayOf(t, r)
	top := topLevel(t, g)
	for _, key := range []string{"upstreams", "discovery"} {
		if v, ok := top[key]; ok {
			t.Errorf("top-level %s %v beside services: every service without its own would take it", key, v)
		}
	}
	if g.cfg.ServicesReady != config.ServicesReadyAny {
		t.Errorf("services_ready %q, want gateway.servicesReady's any", g.cfg.ServicesReady)
	}
	ss := byName(t, g.cfg, "github", "jira", "docs")

	gh := ss["github"]
	if c := gh.Config; c.Path != "/github/mcp" || len(gh.Hosts) != 0 || !gh.Default {
		t.Errorf("github: path %s, hosts %q, default %v: want /github/mcp on every host, the default", c.Path, gh.Hosts, gh.Default)
	}
	if d := gh.Config.Discovery; d != (config.Discovery{DNSName: "github-mcp.mcp.svc.cluster.local", Port: 3000, Scheme: "http",
		Path: "/mcp", SSEPath: d.SSEPath, Interval: d.Interval, MaxInflight: 8}) || len(gh.Config.Upstreams) != 0 {
		t.Errorf("github: discovery %+v, upstreams %v: want its own discovery", d, gh.Config.Upstreams)
	}
	if c := gh.Config; c.Sessions != config.SessionsShared || c.Balance != "least-inflight" ||
		c.Limits.Rate != 5 || c.Limits.Concurrency != 2 || c.Limits.Store != "redis" {
		t.Errorf("github: sessions %s, balance %s, limits %+v: want its own sessions and limits, gateway.config's balance, the shared store",
			c.Sessions, c.Balance, c.Limits)
	}

	jira := ss["jira"]
	if c := jira.Config; c.Path != "/jira/mcp" || jira.Default || c.Discovery.DNSName != "" || len(c.Upstreams) != 2 ||
		!reflect.DeepEqual(c.Upstreams[1], config.Upstream{Name: "jira-1", URL: "http://jira-mcp-1.jira-mcp.mcp.svc.cluster.local:8000/mcp"}) {
		t.Errorf("jira: path %s, discovery %q, upstreams %+v: want /jira/mcp and its two replicas", c.Path, c.Discovery.DNSName, c.Upstreams)
	}
	if c := jira.Config; c.Balance != "round-robin" || c.Retries != 1 || c.Limits.Rate != 10 || c.Sessions != config.SessionsPinned {
		t.Errorf("jira: balance %s, retries %d, limits.rate %v, sessions %s: want its own balance and retries, the top level's limits and sessions",
			c.Balance, c.Retries, c.Limits.Rate, c.Sessions)
	}

	docs := ss["docs"]
	if c := docs.Config; c.Path != "/mcp" || !slices.Equal(docs.Hosts, []string{"docs.example.com", "*.docs.example.com"}) {
		t.Errorf("docs: path %s, hosts %q: want the top level's /mcp for its hosts", c.Path, docs.Hosts)
	}
	if d := docs.Config.Discovery; d.DNSName != "docs-mcp.mcp.svc.cluster.local" || d.Port != 9000 || d.Path != "/api/mcp" || d.Scheme != "https" || d.MaxInflight != 0 {
		t.Errorf("docs: discovery %+v: want its own, with no max_inflight of github's", d)
	}
	if c := docs.Config; c.HealthCheck.Mode != "mcp" || c.SSEPath != "/sse" || c.SSEMessagesPath != "/messages" {
		t.Errorf("docs: health_check.mode %s, sse %s %s: want its own", c.HealthCheck.Mode, c.SSEPath, c.SSEMessagesPath)
	}
	for _, s := range []config.Service{gh, jira} {
		if s.Config.SSEPath != "" {
			t.Errorf("%s: sse_path %q: the 2024-11-05 transport is a service's only where its entry says", s.Name, s.Config.SSEPath)
		}
	}
	for _, s := range ss {
		if c := s.Config; c.Idempotency != "redis" || c.TaskStore != "redis" || c.Gateways != 3 || time.Duration(c.Grace) != 15*time.Second {
			t.Errorf("%s: idempotency %s, task_store %s, gateways %d, grace %s: want the chart's top level",
				s.Name, c.Idempotency, c.TaskStore, c.Gateways, c.Grace)
		}
	}
	for _, want := range []string{
		"github: http://mcpfleet.mcp.svc.cluster.local:80/github/mcp (default)",
		"jira: http://mcpfleet.mcp.svc.cluster.local:80/jira/mcp",
		"docs: /mcp for Host docs.example.com, *.docs.example.com",
	} {
		if !strings.Contains(r.notes, want) {
			t.Errorf("the notes do not say %q:\n%s", want, r.notes)
		}
	}
}

// TestServicesTakeTheChartsFleet checks that a service without replicas of
// its own gets the fleet the chart gives a single service (the example,
// else gateway.discovery), written into its entry, while a service with
// its own keeps it; and that no services renders no services at all.
func TestServicesTakeTheChartsFleet(t *testing.T) {
	services := []any{
		map[string]any{"name": "a", "path": "/a/mcp"},
		map[string]any{"name": "b", "path": "/b/mcp", "upstreams": []any{
			map[string]any{"name": "b-0", "url": "http://b-0.b.mcp.svc.cluster.local:3000/mcp"}}},
	}
	t.Run("the example", func(t *testing.T) {
		r := mustRender(t, renderOptions{set: map[string]any{"gateway": map[string]any{"services": services}}})
		checkRelease(t, r)
		g := gatewayOf(t, r)
		if _, ok := topLevel(t, g)["discovery"]; ok {
			t.Errorf("a top-level discovery beside services:\n%s", g.text)
		}
		ss := byName(t, g.cfg, "a", "b")
		if d := ss["a"].Config.Discovery; d.DNSName != exampleDNS || d.Port != 9001 {
			t.Errorf("a: discovery %+v, want the example's", d)
		}
		if c := ss["b"].Config; c.Discovery.DNSName != "" || len(c.Upstreams) != 1 {
			t.Errorf("b: discovery %q, upstreams %v: want its own upstreams alone", c.Discovery.DNSName, c.Upstreams)
		}
		if g.cfg.ServicesReady != config.ServicesReadyAll {
			t.Errorf("services_ready %q, want all", g.cfg.ServicesReady)
		}
	})
	t.Run("gateway.discovery", func(t *testing.T) {
		r := mustRender(t, renderOptions{files: []string{"own-upstreams.yaml"}, set: map[string]any{"gateway": map[string]any{
			"services": services, "discovery": map[string]any{"maxInflight": 4}}}})
		checkRelease(t, r)
		ss := byName(t, gatewayOf(t, r).cfg, "a", "b")
		if d := ss["a"].Config.Discovery; d.DNSName != "mcp-server.mcp.svc.cluster.local" || d.Port != 3000 || d.MaxInflight != 4 {
			t.Errorf("a: discovery %+v, want gateway.discovery's", d)
		}
		if c := ss["b"].Config; c.Discovery.DNSName != "" || c.Discovery.MaxInflight != 0 {
			t.Errorf("b: discovery %+v beside its own upstreams", c.Discovery)
		}
	})
	t.Run("no services", func(t *testing.T) {
		g := gatewayOf(t, mustRender(t, renderOptions{}))
		top := topLevel(t, g)
		for _, key := range []string{"services", "services_ready"} {
			if _, ok := top[key]; ok {
				t.Errorf("%s without gateway.services:\n%s", key, g.text)
			}
		}
	})
}

// TestBadServicesAreRefused checks that the schema and the chart's checks
// refuse services that serve would refuse or that would give a broken
// fleet, naming the value to change.
func TestBadServicesAreRefused(t *testing.T) {
	fleet := map[string]any{"discovery": map[string]any{"dnsName": "a.mcp.svc.cluster.local", "port": 3000}}
	svc := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name     string
		services []any
		set      map[string]any
		want     string
	}{
		{"a service without name", []any{svc("path", "/a/mcp")}, nil, "at '/gateway/services/0': missing property 'name'"},
		{"a name serve refuses", []any{svc("name", "GitHub", "path", "/a/mcp")}, nil, "at '/gateway/services/0/name': 'GitHub' does not match pattern"},
		{"a name too long", []any{svc("name", strings.Repeat("a", 33), "path", "/a/mcp")}, nil, "/gateway/services/0/name"},
		{"neither path nor hosts", []any{svc("name", "a")}, nil, "missing property 'path'"},
		{"a relative path", []any{svc("name", "a", "path", "a/mcp")}, nil, "/gateway/services/0/path"},
		{"a host with a port", []any{svc("name", "a", "hosts", []any{"docs.example.com:443"})}, nil, "/gateway/services/0/hosts/0"},
		{"a wildcard inside", []any{svc("name", "a", "hosts", []any{"docs.*.example.com"})}, nil, "/gateway/services/0/hosts/0"},
		{"an unknown key", []any{svc("name", "a", "path", "/a/mcp", "balance", "hash")}, nil, "additional properties 'balance' not allowed"},
		{"discovery without port", []any{svc("name", "a", "path", "/a/mcp", "discovery", map[string]any{"dnsName": "a.mcp.svc.cluster.local"})}, nil, "missing property 'port'"},
		{"servicesReady of neither kind", []any{svc("name", "a", "path", "/a/mcp")}, map[string]any{"servicesReady": "most"}, "/gateway/servicesReady"},
		{"discovery and upstreams", []any{svc("name", "a", "path", "/a/mcp", "discovery", fleet["discovery"],
			"upstreams", []any{map[string]any{"url": "http://a:3000/mcp"}})}, nil, "gateway.services[0]: set either discovery or upstreams, not both"},
		{"an entry's key in config", []any{svc("name", "a", "path", "/a/mcp", "config", map[string]any{"hosts": []any{"a.example.com"}})}, nil,
			"gateway.services[0].config.hosts: a key of the entry itself: set gateway.services[0].hosts"},
		{"upstreams in config", []any{svc("name", "a", "path", "/a/mcp", "config", map[string]any{"upstreams": []any{}})}, nil,
			"gateway.services[0].config.upstreams: a key of the entry itself: set gateway.services[0].upstreams"},
		{"a key the chart owns", []any{svc("name", "a", "path", "/a/mcp", "config", map[string]any{"idempotency": "memory"})}, nil,
			"gateway.services[0].config.idempotency: the chart sets this key itself"},
		{"limits.store", []any{svc("name", "a", "path", "/a/mcp", "config", map[string]any{"limits": map[string]any{"store": "memory"}})}, nil,
			"gateway.services[0].config.limits.store: the chart sets this key itself"},
		{"two of one name", []any{svc("name", "a", "path", "/a/mcp"), svc("name", "a", "path", "/b/mcp")}, nil,
			`gateway.services[1]: the name "a" is gateway.services[0]'s too`},
		{"two defaults", []any{svc("name", "a", "path", "/a/mcp", "default", true), svc("name", "b", "path", "/b/mcp", "default", true)}, nil,
			"gateway.services: a, b all say default: true"},
		{"services in gateway.config", nil, map[string]any{"config": map[string]any{"services": []any{}}},
			"gateway.config.services: the chart sets this key itself, from gateway.services"},
		{"servicesReady any without services", nil, map[string]any{"servicesReady": "any"}, "gateway.servicesReady: only with gateway.services"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gw := map[string]any{}
			if tc.services != nil {
				gw["services"] = tc.services
			}
			for k, v := range tc.set {
				gw[k] = v
			}
			_, err := render(renderOptions{set: map[string]any{"gateway": gw}})
			t.Logf("%v", err)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("want an error with %q, got %v", tc.want, err)
			}
		})
	}
	t.Run("a service without replicas", func(t *testing.T) {
		_, err := render(renderOptions{set: map[string]any{"exampleServer": map[string]any{"enabled": false},
			"gateway": map[string]any{"services": []any{svc("name", "a", "path", "/a/mcp", "discovery", fleet["discovery"]), svc("name", "b", "path", "/b/mcp")}}}})
		if want := "gateway.services[1] (b): no replicas"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want an error with %q, got %v", want, err)
		}
	})
}

// TestServeRefusesBadServices checks that services the schema lets through
// but serve refuses fail the render's checks: two services a request could
// reach both of, a key of the process in a service's config, a bad value
// of a service's own key.
func TestServeRefusesBadServices(t *testing.T) {
	for _, tc := range []struct {
		name     string
		services []any
		want     string
	}{
		{"one path, every host", []any{
			map[string]any{"name": "a", "path": "/mcp"},
			map[string]any{"name": "b", "hosts": []any{"b.example.com"}},
		}, "services: a and b overlap"},
		{"meeting hosts", []any{
			map[string]any{"name": "a", "hosts": []any{"*.example.com"}},
			map[string]any{"name": "b", "hosts": []any{"b.example.com"}},
		}, "services: a and b overlap: both answer host b.example.com path /mcp"},
		{"a process key", []any{
			map[string]any{"name": "a", "path": "/a/mcp", "config": map[string]any{"log_level": "debug"}},
		}, "log_level: not a key of a service"},
		{"a bad value of its own", []any{
			map[string]any{"name": "a", "path": "/a/mcp", "config": map[string]any{"balance": "random"}},
		}, "services[0]: a: balance"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mustRender(t, renderOptions{set: map[string]any{"gateway": map[string]any{"services": tc.services}}})
			var text string
			for _, m := range all[*corev1.ConfigMap](r) {
				text = m.Data["mcpfleet.yaml"]
			}
			_, err := config.Parse([]byte(text))
			t.Logf("%v", err)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("want serve's parser to refuse it with %q, got %v", tc.want, err)
			}
		})
	}
}

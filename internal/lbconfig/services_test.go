package lbconfig

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/config"
	"github.com/mcpfleet/mcpfleet/internal/probe"
)

// servicesSpec is three services on listen: a at /a/mcp (replicas at
// /mcp, the default), b at /b/mcp (no retries, no checks, a passthrough
// prefix) and c at /mcp on c.example.com and *.c.example.com.
func servicesSpec(listen string) Spec {
	fleet := func(base string, s Spec) Fleet {
		for i := range s.Upstreams {
			s.Upstreams[i].Name = base + s.Upstreams[i].Name[1:]
		}
		return Fleet{Upstreams: s.Upstreams, Health: s.Health, Retries: s.Retries, ConnectTimeout: s.ConnectTimeout, MaxBodyBytes: s.MaxBodyBytes}
	}
	a := fleet("a", testSpec(listen, "127.0.0.1:9001", "127.0.0.1:9002"))
	b := fleet("b", testSpec(listen, "127.0.0.1:9011", "localhost:9012"))
	b.Retries, b.Health.Interval = 0, 0
	c := fleet("c", testSpec(listen, "127.0.0.1:9021"))
	c.ConnectTimeout = time.Second
	return Spec{Listen: listen, Salt: testSalt, Services: []Service{
		{Name: "a", Path: "/a/mcp", ReplicaPath: "/mcp", Default: true, Fleet: a},
		{Name: "b", Path: "/b/mcp", Paths: []string{"/b/oauth/"}, Fleet: b},
		{Name: "c", Path: "/mcp", Hosts: []string{"c.example.com", "*.c.example.com"}, Fleet: c},
	}}
}

// block returns the text of conf from the line that starts with opening
// (after indentation) to the line that closes it at that indentation.
func block(t *testing.T, conf, opening string) string {
	t.Helper()
	for _, from := range strings.SplitAfter(conf, "\n") {
		trimmed := strings.TrimLeft(from, " ")
		if strings.HasPrefix(trimmed, opening) {
			indent := from[:len(from)-len(trimmed)]
			start := strings.Index(conf, from)
			end := strings.Index(conf[start:], "\n"+indent+"}")
			if end < 0 {
				t.Fatalf("%q is not closed", opening)
			}
			return conf[start : start+end]
		}
	}
	t.Fatalf("no %q in:\n%s", opening, conf)
	return ""
}

// section returns an HAProxy section: from its header to the next blank
// line.
func section(t *testing.T, conf, header string) string {
	t.Helper()
	start := strings.Index(conf, "\n"+header+"\n")
	if start < 0 {
		t.Fatalf("no section %q", header)
	}
	rest := conf[start+1:]
	if end := strings.Index(rest, "\n\n"); end >= 0 {
		rest = rest[:end]
	}
	return rest
}

func wantLines(t *testing.T, what, text string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(text, l) {
			t.Errorf("%s lacks %q:\n%s", what, l, text)
		}
	}
}

func TestNginxServices(t *testing.T) {
	out, err := Nginx(servicesSpec("127.0.0.1:8080"))
	if err != nil {
		t.Fatal(err)
	}
	conf := string(out)
	// Each service's upstream holds its replicas and only those.
	for name, addrs := range map[string][]string{"a": {"127.0.0.1:9001", "127.0.0.1:9002"}, "b": {"127.0.0.1:9011", "localhost:9012"}, "c": {"127.0.0.1:9021"}} {
		up := block(t, conf, "upstream mcp_fleet_"+name+" {")
		wantLines(t, "upstream "+name, up, `hash "`+testSalt+`$mcp_affinity" consistent;`, "keepalive 32;")
		if n := strings.Count(up, "server "); n != len(addrs) {
			t.Errorf("upstream %s has %d servers, want %d:\n%s", name, n, len(addrs), up)
		}
		for _, a := range addrs {
			wantLines(t, "upstream "+name, up, "server "+a+" ")
		}
	}
	if n := strings.Count(conf, testSalt); n != 3 {
		t.Errorf("salt appears %d times, want once in each of 3 upstreams", n)
	}
	checkNoDirective(t, conf, "non_idempotent", "http_500", "location /.well-known/oauth-protected-resource {")

	servers := strings.Split(conf, "\n    server {\n")[1:]
	if len(servers) != 2 {
		t.Fatalf("%d server blocks, want 2 (every host; c's hosts)", len(servers))
	}
	anyHost, cHosts := servers[0], servers[1]
	wantLines(t, "the default server", anyHost, "listen 127.0.0.1:8080 default_server;", "server_name _;",
		"location = /a/mcp {", "location = /b/mcp {", "location /b/oauth/ {")
	wantLines(t, "c's server", cHosts, "listen 127.0.0.1:8080;", `server_name c.example.com ~^[^.]+[.]c[.]example[.]com$;`,
		"location = /a/mcp {", "location = /b/mcp {", "location = /mcp {")
	if strings.Contains(anyHost, "mcp_fleet_c") {
		t.Error("the server of every host reaches c, whose hosts are its own")
	}
	for i, srv := range servers {
		wantLines(t, fmt.Sprintf("server %d", i), srv, "location / {\n            return 404;", "proxy_set_header Host              $host;")
		// The MCP endpoint goes to its replicas' path, streamed, with the
		// service's retries and bounds.
		wantLines(t, fmt.Sprintf("server %d /a/mcp", i), block(t, srv, "location = /a/mcp {"),
			"proxy_pass http://mcp_fleet_a/mcp;", "proxy_next_upstream_tries 2;", "proxy_buffering off;", "proxy_read_timeout 1h;", "client_max_body_size 4096k;")
		wantLines(t, fmt.Sprintf("server %d /b/mcp", i), block(t, srv, "location = /b/mcp {"),
			"proxy_pass http://mcp_fleet_b;", "proxy_next_upstream off;", "proxy_request_buffering off;")
		// Discovery documents: the service's by suffix, the root ones the
		// default's, passed unchanged.
		for _, doc := range wellKnown {
			wantLines(t, doc, block(t, srv, "location = "+doc+"/b/mcp {"), "proxy_pass http://mcp_fleet_b;")
			wantLines(t, doc, block(t, srv, "location = "+doc+" {"), "proxy_pass http://mcp_fleet_a;")
		}
	}
	wantLines(t, "c's /mcp", block(t, cHosts, "location = /mcp {"), "proxy_pass http://mcp_fleet_c;", "proxy_connect_timeout 1s;")
	wantLines(t, "c's discovery", block(t, cHosts, "location = /.well-known/oauth-protected-resource/mcp {"), "proxy_pass http://mcp_fleet_c;")
}

func TestHAProxyServices(t *testing.T) {
	out, err := HAProxy(servicesSpec("127.0.0.1:8080"))
	if err != nil {
		t.Fatal(err)
	}
	conf := string(out)
	front := section(t, conf, "frontend mcp")
	wantLines(t, "the frontend", front,
		`http-request set-var(txn.host) req.hdr(host),field(1,:),lower,regsub([.]$,)`,
		"acl host_c var(txn.host) -m str c.example.com\n",
		"acl host_c var(txn.host) -m reg ^[^.]+[.]c[.]example[.]com$\n",
		"acl path_a path /a/mcp /.well-known/oauth-protected-resource/a/mcp /.well-known/oauth-authorization-server/a/mcp /.well-known/openid-configuration/a/mcp\n",
		"acl path_b path_beg /b/oauth/\n",
		"acl root_docs path /.well-known/oauth-protected-resource /.well-known/oauth-authorization-server /.well-known/openid-configuration\n",
		"use_backend mcp_fleet_a if root_docs\n",
		"use_backend mcp_fleet_a if path_a\n",
		"use_backend mcp_fleet_b if path_b\n",
		"use_backend mcp_fleet_c if host_c path_c\n",
		"default_backend mcp_no_service",
	)
	if strings.Contains(front, "default_backend mcp_fleet") {
		t.Error("a request for no service has a fleet as its default backend")
	}
	wantLines(t, "the 404 backend", section(t, conf, "backend mcp_no_service"), "http-request return status 404")
	for name, want := range map[string]struct {
		lines   []string
		servers int
	}{
		"a": {[]string{"timeout connect 2s", "retries 1", "http-request set-path /mcp if { path /a/mcp }", "option httpchk",
			"server a1 127.0.0.1:9001 check", "server a2 127.0.0.1:9002 check"}, 2},
		"b": {[]string{"retries 0", "server b1 127.0.0.1:9011\n", "server b2 localhost:9012"}, 2},
		"c": {[]string{"timeout connect 1s", "server c1 127.0.0.1:9021 check"}, 1},
	} {
		be := section(t, conf, "backend mcp_fleet_"+name)
		wantLines(t, "backend "+name, be, append(want.lines, "balance hash var(txn.cred),concat("+testSalt+"),sha1,hex", "hash-type consistent")...)
		if n := strings.Count(be, "  server "); n != want.servers {
			t.Errorf("backend %s has %d servers, want %d:\n%s", name, n, want.servers, be)
		}
		if name != "a" && strings.Contains(be, "set-path") {
			t.Errorf("backend %s rewrites a path its replicas serve:\n%s", name, be)
		}
	}
	if strings.Contains(section(t, conf, "backend mcp_fleet_b"), "httpchk") {
		t.Error("backend b checks health with its checks off")
	}
	if strings.Contains(section(t, conf, "defaults"), "retries") {
		t.Error("defaults set retries, which are each backend's")
	}
	checkNoDirective(t, conf, "redispatch", "retry-on", "capture request header")
}

func TestHostGroups(t *testing.T) {
	s := Spec{Services: []Service{
		{Name: "x", Hosts: []string{"a.example.com"}},
		{Name: "y", Hosts: []string{"*.example.com"}},
		{Name: "z"},
		{Name: "w", Hosts: []string{"b.example.org", "c.example.org"}},
		{Name: "v", Hosts: []string{"c.example.org", "b.example.org"}},
	}}
	got := s.hostGroups()
	want := []hostGroup{
		{Services: []int{2}},
		// An exact host is also the wildcard's that takes it.
		{Hosts: []string{"a.example.com"}, Services: []int{0, 1, 2}},
		{Hosts: []string{"*.example.com"}, Services: []int{1, 2}},
		// Hosts reaching the same services share a server.
		{Hosts: []string{"b.example.org", "c.example.org"}, Services: []int{2, 3, 4}},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("hostGroups() = %v, want %v", got, want)
	}

}

func TestServicesRejectUnsafeValues(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*Spec)
		want   string
	}{
		{"service name with a brace", func(s *Spec) { s.Services[1].Name = "b}" }, `service 1 ("b}")`},
		{"upper-case service name", func(s *Spec) { s.Services[0].Name = "A" }, `service 0 ("A")`},
		{"duplicate service name", func(s *Spec) { s.Services[1].Name = "a" }, `service "a": duplicate`},
		{"host with a semicolon", func(s *Spec) { s.Services[2].Hosts[0] = "c.example.com;" }, `service "c": host "c.example.com;"`},
		{"host with a port", func(s *Spec) { s.Services[2].Hosts[0] = "c.example.com:80" }, `service "c": host`},
		{"two wildcards", func(s *Spec) { s.Services[2].Hosts[1] = "*.*.example.com" }, `service "c": host`},
		{"path with a space", func(s *Spec) { s.Services[0].Path = "/a mcp" }, `service "a": path "/a mcp"`},
		{"replica path with a brace", func(s *Spec) { s.Services[0].ReplicaPath = "/mcp{" }, `service "a": replica path`},
		{"other path /", func(s *Spec) { s.Services[1].Paths = []string{"/"} }, `service "b": path "/"`},
		{"upstream name", func(s *Spec) { s.Services[1].Upstreams[0].Name = "b1;" }, `service "b": upstream 0 ("b1;")`},
		{"no upstreams", func(s *Spec) { s.Services[2].Upstreams = nil }, `service "c": at least one upstream`},
		{"retries", func(s *Spec) { s.Services[2].Retries = 11 }, `service "c": retries 11`},
		{"same path on every host", func(s *Spec) { s.Services[1].Path = "/a/mcp" }, `services "a" and "b" both answer /a/mcp`},
		{"a path of a shared host", func(s *Spec) { s.Services[2].Path = "/b/mcp" }, `services "b" and "c" both answer /b/mcp`},
		{"a discovery document", func(s *Spec) {
			s.Services[1].Paths = []string{"/.well-known/oauth-protected-resource/a/mcp"}
		}, `services "a" and "b" both answer /.well-known/oauth-protected-resource/a/mcp`},
		{"a root discovery document", func(s *Spec) {
			s.Services[2].Paths = []string{"/.well-known/openid-configuration"}
		}, `service "c": path /.well-known/openid-configuration is the default service's`},
		{"a path twice", func(s *Spec) { s.Services[1].Paths = []string{"/b/x", "/b/x"} }, `service "b": path /b/x given twice`},
		{"two defaults", func(s *Spec) { s.Services[2].Default = true }, "more than one service is the default"},
		{"upstreams of the spec's own", func(s *Spec) { s.Upstreams = s.Services[0].Upstreams }, "each service's own"},
		{"salt", func(s *Spec) { s.Salt = "short" }, "salt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := servicesSpec("127.0.0.1:8080")
			tc.mutate(&s)
			for name, emit := range map[string]func(Spec) ([]byte, error){"Nginx": Nginx, "HAProxy": HAProxy} {
				_, err := emit(s)
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s() = %v, want an error naming %q", name, err, tc.want)
				}
			}
		})
	}
	// The same path on hosts apart is two services' rightly.
	s := servicesSpec("127.0.0.1:8080")
	s.Services[0].Hosts = []string{"a.example.com"}
	s.Services[0].Path = "/mcp"
	if _, err := Nginx(s); err != nil {
		t.Errorf("one path on hosts apart: %v", err)
	}
}

func TestFromConfigServices(t *testing.T) {
	salt := []byte("0123456789abcdef")
	c := loadConfig(t, `listen: 127.0.0.1:9000
retries: 2
health_check:
  interval: 3s
services:
  - name: github
    path: /github/mcp
    default: true
    upstreams:
      - name: g1
        url: http://10.0.0.1:8080/mcp
      - url: http://10.0.0.2:8080/mcp
  - name: gitlab
    path: /gitlab/mcp
    retries: 0
    dial_timeout: 1500ms
    health_check:
      interval: 0s
    passthrough_paths: [/oauth/]
    upstreams:
      - name: l1
        url: http://10.0.1.1:8080/gitlab/mcp
  - name: jira
    hosts: [jira.example.com, "*.jira.example.com"]
    sse_path: /sse
    upstreams:
      - name: j1
        url: http://10.0.2.1:8080/mcp
`)
	s, err := FromConfig(c, salt, false, ":8443")
	if err != nil {
		t.Fatal(err)
	}
	if s.Listen != ":8443" || s.Path != "" || len(s.Upstreams) != 0 || len(s.Services) != 3 {
		t.Fatalf("spec %+v", s)
	}
	gh, gl, jira := s.Services[0], s.Services[1], s.Services[2]
	if gh.Name != "github" || !gh.Default || gh.Path != "/github/mcp" || gh.ReplicaPath != "/mcp" || gh.Retries != 2 ||
		gh.Health.Interval != 3*time.Second || len(gh.Upstreams) != 2 || gh.Upstreams[1].Name != "r-10.0.0.2-8080" {
		t.Errorf("github %+v", gh)
	}
	if gl.ReplicaPath != "" || gl.Retries != 0 || gl.ConnectTimeout != 1500*time.Millisecond || gl.Health.Interval != 0 ||
		!slices.Equal(gl.Paths, []string{"/oauth/"}) || gl.Upstreams[0].Addr() != "10.0.1.1:8080" {
		t.Errorf("gitlab %+v", gl)
	}
	if !slices.Equal(jira.Hosts, []string{"jira.example.com", "*.jira.example.com"}) || jira.Path != "/mcp" || jira.ReplicaPath != "" ||
		!slices.Equal(jira.Paths, []string{"/sse", "/messages"}) || jira.Default {
		t.Errorf("jira %+v", jira)
	}
	for _, tc := range []struct{ name, yaml, want string }{
		{"https", "services:\n  - name: a\n    upstreams:\n      - name: a1\n        url: https://10.0.0.1/mcp\n",
			`service "a": upstream "a1": scheme "https"`},
		{"paths differ", "services:\n  - name: a\n    upstreams:\n      - name: a1\n        url: http://10.0.0.1/mcp\n      - name: a2\n        url: http://10.0.0.2/v2/mcp\n",
			`service "a": upstream "a2": path`},
		{"discovery", "services:\n  - name: a\n    discovery:\n      dns_name: mcp.svc\n      port: 8080\n", `service "a": discovery.dns_name`},
		{"unsafe host", "services:\n  - name: a\n    hosts: [\"a;b.example.com\"]\n    upstreams:\n      - url: http://10.0.0.1/mcp\n", `service "a": host "a;b.example.com"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := config.Parse([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			_, err = FromConfig(c, salt, false, "")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("FromConfig() = %v, want an error naming %q", err, tc.want)
			}
			if tc.name == "discovery" && !errors.Is(err, ErrDiscovery) {
				t.Errorf("FromConfig() = %v, want ErrDiscovery", err)
			}
		})
	}
}

// TestBalancersAcceptServices runs "nginx -t" and "haproxy -c" on the
// files emitted for three services: two by path, one by host.
func TestBalancersAcceptServices(t *testing.T) {
	checkBalancersAccept(t, servicesSpec)
}

// TestEmittedServicesRoute runs the real balancers on the files emitted
// for real test servers behind three services: a and b by path, c by
// host. Each service's calls reach its replicas and no other's; a call
// for no service is 404.
func TestEmittedServicesRoute(t *testing.T) {
	for _, tc := range balancers {
		t.Run(tc.name, func(t *testing.T) {
			base := "http://" + tc.run(t, loadConfig(t, fmt.Sprintf(`services:
  - name: a
    path: /a/mcp
    upstreams:
      - {name: a1, url: %s}
      - {name: a2, url: %s}
  - name: b
    path: /b/mcp
    upstreams:
      - {name: b1, url: %s}
      - {name: b2, url: %s}
  - name: c
    hosts: ["*.example.test"]
    upstreams:
      - {name: c1, url: %s}
`, startReplica(t, "a1"), startReplica(t, "a2"), startReplica(t, "b1"), startReplica(t, "b2"), startReplica(t, "c1"))))
			for _, call := range []struct {
				path, host string
				replicas   []string
			}{
				{"/a/mcp", "", []string{"a1", "a2"}},
				{"/b/mcp", "", []string{"b1", "b2"}},
				{"/mcp", "x.example.test", []string{"c1"}},
				{"/mcp", "X.Example.Test:8080", []string{"c1"}},
			} {
				client := hostClient(call.host)
				waitServed(t, client, base+call.path)
				res, err := probe.Run(t.Context(), &probe.Options{URL: base + call.path, Identities: 40, Requests: 3, Client: client})
				if err != nil {
					t.Fatalf("probe.Run(%s, host %q): %v", call.path, call.host, err)
				}
				s := probe.Summarize(res.Observations)
				if err := s.ExpectSticky(); err != nil {
					t.Errorf("%s, host %q: ExpectSticky() = %v; summary %+v", call.path, call.host, err, s)
				}
				var got []string
				for _, r := range s.Replicas {
					got = append(got, r.Name)
				}
				slices.Sort(got)
				if !slices.Equal(got, call.replicas) {
					t.Errorf("%s, host %q: answered by %v, want %v", call.path, call.host, got, call.replicas)
				}
			}
			for _, call := range []struct{ path, host string }{
				{"/mcp", ""},                                  // c's path on a host not c's
				{"/mcp", "a.b.example.test"},                  // two labels for the star
				{"/c/mcp", "x.example.test"},                  // no service's path
				{"/health", ""},                               // the replicas' own paths are not routed
				{"/.well-known/oauth-protected-resource", ""}, // no default service
			} {
				if code := postStatus(t, base+call.path, call.host); code != http.StatusNotFound {
					t.Errorf("POST %s, host %q: status %d, want 404", call.path, call.host, code)
				}
			}
		})
	}
}

// hostClient is an HTTP client that sends host as every request's Host;
// "" leaves it.
func hostClient(host string) *http.Client {
	if host == "" {
		return &http.Client{}
	}
	return &http.Client{Transport: hostTransport(host)}
}

type hostTransport string

func (h hostTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Host = string(h)
	return http.DefaultTransport.RoundTrip(r)
}

// waitServed waits, for up to ten seconds, until a call to u through
// client is answered: the balancer is up and sees a replica.
func waitServed(t *testing.T, client *http.Client, u string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := probe.Run(t.Context(), &probe.Options{URL: u, Identities: 1, Requests: 1, Client: client})
		if err == nil && len(res.Failures) == 0 {
			return
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("%s", res.Failures[0].Example)
			}
			t.Fatalf("%s not served after 10s: %v", u, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// postStatus posts an empty JSON object to u with host as its Host.
func postStatus(t *testing.T, u, host string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, u, strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hostClient(host).Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", u, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

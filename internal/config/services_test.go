package config

import (
	"strings"
	"testing"
)

const threeServices = `
limits: {rate: 5, tools: {search: 2}}
retries: 3
services:
  - name: github
    path: /github/mcp
    upstreams: [{url: "http://127.0.0.1:9001/mcp"}]
    limits: {tools: {write: 1}}
  - name: jira
    path: /jira/mcp
    limits: {rate: 0}
    retries: 0
    sse_path: /jira/sse
    upstreams: [{url: "http://127.0.0.1:9002/mcp"}]
  - name: internal
    hosts: [mcp.internal.example, "*.corp.example"]
    default: true
    upstreams: [{url: "http://127.0.0.1:9003/mcp"}]
`

// TestServicesResolveOverTheTopLevel: each service is the top level with
// its own keys over it, nested keys merged, and a service's map its own.
func TestServicesResolveOverTheTopLevel(t *testing.T) {
	c, err := Parse([]byte(threeServices))
	if err != nil {
		t.Fatal(err)
	}
	ss, err := c.ResolveServices()
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 3 {
		t.Fatalf("%d services", len(ss))
	}
	gh, jira, in := ss[0].Config, ss[1].Config, ss[2].Config
	if gh.Path != "/github/mcp" || gh.Limits.Rate != 5 || gh.Retries != 3 || gh.Limits.Tools["write"] != 1 || gh.Limits.Tools["search"] != 2 {
		t.Errorf("github: path %s, rate %v, retries %d, tools %v: want the top level's rate, retries and tool cap under its own", gh.Path, gh.Limits.Rate, gh.Retries, gh.Limits.Tools)
	}
	if c.Limits.Tools["write"] != 0 {
		t.Errorf("github's tool cap leaked into the top level: %v", c.Limits.Tools)
	}
	if jira.Limits.Rate != 0 || jira.Retries != 0 || jira.Limits.Store != "memory" {
		t.Errorf("jira: rate %v, retries %d, store %q: want its own 0s over the top level, the store default kept", jira.Limits.Rate, jira.Retries, jira.Limits.Store)
	}
	if jira.SSEPath != "/jira/sse" || jira.SSEMessagesPath != "/jira/messages" || gh.SSEPath != "" {
		t.Errorf("the 2024-11-05 transport: jira at %q and %q, github at %q; want jira's own paths and github without", jira.SSEPath, jira.SSEMessagesPath, gh.SSEPath)
	}
	if in.Path != "/mcp" || !ss[2].Default || len(ss[2].Hosts) != 2 || ss[0].Default {
		t.Errorf("internal: path %s, default %v, hosts %v", in.Path, ss[2].Default, ss[2].Hosts)
	}
	// A flag changes the top level after the file is read: every service
	// that does not set the key gets it.
	c.Retries = 1
	if ss, err = c.ResolveServices(); err != nil || ss[0].Config.Retries != 1 || ss[1].Config.Retries != 0 {
		t.Errorf("after a flag set retries 1: github %d, jira %d (%v); want 1 and jira's own 0", ss[0].Config.Retries, ss[1].Config.Retries, err)
	}
	// Without services: one unnamed service, the top level itself.
	one, err := Parse([]byte(`upstreams: [{url: "http://127.0.0.1:9001/mcp"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if ss, err := one.ResolveServices(); err != nil || len(ss) != 1 || ss[0].Name != "" || ss[0].Config.Path != "/mcp" || ss[0].Config.SSEPath == "" {
		t.Errorf("one service: %+v, %v", ss, err)
	}
}

// TestServicesRefused: what cannot be served is refused at start, naming
// the entry and what is wrong.
func TestServicesRefused(t *testing.T) {
	up := `upstreams: [{url: "http://127.0.0.1:9001/mcp"}]`
	tests := []struct{ name, yaml, want string }{
		{"a process key", "services:\n  - {name: a, listen: 127.0.0.1:1, " + up + "}", "line 2: services[0].listen: not a key of a service"},
		{"no name", "services:\n  - {path: /a/mcp, " + up + "}", `services[0]: name: want 1 to 32`},
		{"a bad name", "services:\n  - {name: A:b, " + up + "}", `name: want 1 to 32`},
		{"a bad key inside", "services:\n  - {name: a, limits: {rat: 1}, " + up + "}", `line 2: services[0].limits: unknown key "rat" (did you mean "rate"?)`},
		{"a bad value inside", "services:\n  - {name: a, balance: fastest, " + up + "}", "services[0]: a: balance"},
		{"no fleet", "services:\n  - {name: a}", "services[0]: a: upstreams: at least one upstream"},
		{"two of a name", "services:\n  - {name: a, path: /a/mcp, " + up + "}\n  - {name: a, path: /b/mcp, " + up + "}", `two services named "a"`},
		{"one path", "services:\n  - {name: a, " + up + "}\n  - {name: b, " + up + "}", "a and b overlap: both answer path /mcp"},
		{"a path and any host", "services:\n  - {name: a, hosts: [x.example], " + up + "}\n  - {name: b, " + up + "}", "a and b overlap"},
		{"a wildcard over a host", "services:\n  - {name: a, hosts: ['*.example'], " + up + "}\n  - {name: b, hosts: [x.example], " + up + "}", "a and b overlap: both answer host x.example path /mcp"},
		{"a passthrough path", "services:\n  - {name: a, passthrough_paths: [/b/mcp], " + up + "}\n  - {name: b, path: /b/mcp, " + up + "}", "a and b overlap: both answer path /b/mcp"},
		{"a passthrough prefix over a path", "services:\n  - {name: a, passthrough_paths: [/b/], " + up + "}\n  - {name: b, path: /b/mcp, " + up + "}", "a and b overlap: both answer path /b/mcp"},
		{"two defaults", "services:\n  - {name: a, path: /a/mcp, default: true, " + up + "}\n  - {name: b, default: true, " + up + "}", "more than one service says default"},
		{"a host with a port", "services:\n  - {name: a, hosts: ['x.example:443'], " + up + "}", "want a lower-case host name without port"},
		{"two wildcards", "services:\n  - {name: a, hosts: ['*.*.example'], " + up + "}", "one wildcard label at most"},
		{"not a mapping", "services: [github]", `line 1: services[0]: got "github", want a mapping`},
		{"services_ready", "services_ready: most\n" + up, "services_ready: must be all or any"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want it to say %q", err, tt.want)
			}
		})
	}
	// Different hosts on one path, and different paths: both fine.
	for _, ok := range []string{
		"services:\n  - {name: a, hosts: [a.example], " + up + "}\n  - {name: b, hosts: [b.example, '*.c.example'], " + up + "}",
		"services:\n  - {name: a, path: /a/mcp, " + up + "}\n  - {name: b, path: /b/mcp, " + up + "}",
	} {
		if _, err := Parse([]byte(ok)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

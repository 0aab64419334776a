package lbconfig

import (
	"fmt"
	"github.com/mcpfleet/mcpfleet/internal/testproc"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/config"
	"github.com/mcpfleet/mcpfleet/internal/probe"
	"github.com/mcpfleet/mcpfleet/internal/testserver"
)

// TestEmittedConfigsAreSticky emits each configuration for three real
// test servers on loopback, runs the real balancer on it and proves with
// the probe that every identity stays on one replica and all three serve.
func TestEmittedConfigsAreSticky(t *testing.T) {
	for _, tc := range balancers {
		t.Run(tc.name, func(t *testing.T) {
			listen := tc.run(t, fleetConfig(t, "r1", "r2", "r3"))
			testproc.WaitReady(t, "http://"+listen+"/health")
			res, err := probe.Run(t.Context(), &probe.Options{URL: "http://" + listen + "/mcp", Identities: 60, Requests: 5})
			if err != nil {
				t.Fatalf("probe.Run: %v", err)
			}
			s := probe.Summarize(res.Observations)
			if err := s.ExpectSticky(); err != nil {
				t.Errorf("ExpectSticky() = %v; summary %+v", err, s)
			}
			if len(s.Replicas) != 3 {
				t.Errorf("identities reached %d replicas, want all 3: %+v", len(s.Replicas), s.Replicas)
			}
			t.Logf("stickiness %s, spread %+v", probe.Percent(s.Stickiness), s.Replicas)
		})
	}
}

// balancer is a real balancer: its emitter and how to start it on an
// emitted file.
type balancer struct {
	name  string
	emit  func(Spec) ([]byte, error)
	start func(t *testing.T, bin, dir, file string)
}

var balancers = []balancer{
	{"nginx", Nginx, func(t *testing.T, bin, dir, file string) {
		testproc.Start(t, bin, "-p", dir+"/", "-e", filepath.Join(dir, "error.log"), "-c", file, "-g", "daemon off;")
	}},
	{"haproxy", HAProxy, func(t *testing.T, bin, dir, file string) {
		testproc.Start(t, bin, "-f", file, "-db")
	}},
}

// run emits the balancer's file for c on a free loopback address, starts
// the balancer on it (or skips the test without one) and returns the
// address.
func (b balancer) run(t *testing.T, c config.Config) string {
	t.Helper()
	bin := testproc.FindBinary(t, b.name, b.name, "MCPFLEET_REQUIRE_BALANCERS")
	listen := testproc.FreeAddr(t)
	spec, err := FromConfig(c, []byte("a-test-salt-of-enough-bytes"), false, listen)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	b.start(t, bin, dir, emitFile(t, b.emit, spec, dir, b.name+".conf"))
	return listen
}

// fleetConfig starts a real test server for each name on loopback and
// returns a gateway configuration that lists them.
func fleetConfig(t *testing.T, names ...string) config.Config {
	t.Helper()
	y := "upstreams:\n"
	for _, name := range names {
		y += fmt.Sprintf("  - name: %s\n    url: %s\n", name, startReplica(t, name))
	}
	return loadConfig(t, y)
}

// startReplica starts a real test server named name on loopback and
// returns its MCP endpoint's URL.
func startReplica(t *testing.T, name string) string {
	t.Helper()
	s, err := testserver.New(name, &testserver.Options{Era: testserver.EraBoth})
	if err != nil {
		t.Fatalf("testserver.New(%q): %v", name, err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

// loadConfig reads and validates a gateway configuration.
func loadConfig(t *testing.T, y string) config.Config {
	t.Helper()
	c, err := config.Parse([]byte(y))
	if err != nil {
		t.Fatalf("%v in:\n%s", err, y)
	}
	return c
}

package lbconfig

import (
	"fmt"
	"github.com/mcpfleet/mcpfleet/internal/testproc"
	"net/http/httptest"
	"os"
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
	for _, tc := range []struct {
		name  string
		emit  func(Spec) ([]byte, error)
		start func(t *testing.T, bin, dir, file string)
	}{
		{"nginx", Nginx, func(t *testing.T, bin, dir, file string) {
			testproc.Start(t, bin, "-p", dir+"/", "-e", filepath.Join(dir, "error.log"), "-c", file, "-g", "daemon off;")
		}},
		{"haproxy", HAProxy, func(t *testing.T, bin, dir, file string) {
			testproc.Start(t, bin, "-f", file, "-db")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := testproc.FindBinary(t, tc.name, tc.name, "MCPFLEET_REQUIRE_BALANCERS")
			c := fleetConfig(t, "r1", "r2", "r3")
			listen := testproc.FreeAddr(t)
			spec, err := FromConfig(c, []byte("a-test-salt-of-enough-bytes"), false, listen)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			tc.start(t, bin, dir, emitFile(t, tc.emit, spec, dir, tc.name+".conf"))
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

// fleetConfig starts a real test server for each name on loopback and
// returns a gateway configuration that lists them.
func fleetConfig(t *testing.T, names ...string) config.Config {
	t.Helper()
	y := "upstreams:\n"
	for _, name := range names {
		s, err := testserver.New(name, &testserver.Options{Era: testserver.EraBoth})
		if err != nil {
			t.Fatalf("testserver.New(%q): %v", name, err)
		}
		hs := httptest.NewServer(s.Handler())
		t.Cleanup(hs.Close)
		y += fmt.Sprintf("  - name: %s\n    url: %s/mcp\n", name, hs.URL)
	}
	file := filepath.Join(t.TempDir(), "mcpfleet.yaml")
	if err := os.WriteFile(file, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

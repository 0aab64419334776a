package lbconfig

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/config"
)

// goldenSpecs are single-fleet specs whose emitted files are kept in
// testdata: a configuration without services must keep producing exactly
// these bytes.
func goldenSpecs(t *testing.T) map[string]Spec {
	t.Helper()
	off := testSpec(":18080", "127.0.0.1:9001", "127.0.0.1:9002", "localhost:9003")
	off.Upstreams[1].Host = "::1"
	off.Retries, off.Health.Interval, off.SaltGenerated, off.MaxBodyBytes = 0, 0, true, 0
	c, err := config.Parse([]byte("listen: 127.0.0.1:9000\nretries: 2\ndial_timeout: 1500ms\n" +
		"health_check:\n  interval: 3s\n  host: mcp.internal\n" +
		"upstreams:\n  - name: a\n    url: http://10.0.0.1:8080/v1/mcp\n  - url: http://10.0.0.2:8080/v1/mcp\n"))
	if err != nil {
		t.Fatal(err)
	}
	fromConfig, err := FromConfig(c, []byte("0123456789abcdef"), false, "")
	if err != nil {
		t.Fatal(err)
	}
	return map[string]Spec{"single": defaultSpec(), "single-off": off, "single-config": fromConfig}
}

// TestSingleFleetUnchanged compares the emitted files of single-fleet
// specs with the ones in testdata, byte for byte.
func TestSingleFleetUnchanged(t *testing.T) {
	for name, s := range goldenSpecs(t) {
		for file, emit := range map[string]func(Spec) ([]byte, error){name + ".nginx.conf": Nginx, name + ".haproxy.cfg": HAProxy} {
			got, err := emit(s)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			want, err := os.ReadFile(filepath.Join("testdata", file))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("%s differs from testdata/%s:\n%s", file, file, got)
			}
		}
	}
}

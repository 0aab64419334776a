// Package arch holds no code: its test states the arrows between packages
// that must not exist, so that a layering rule cannot quietly break.
package arch

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const (
	mod   = "github.com/mcpfleet/mcpfleet/internal/"
	redis = "github.com/redis/go-redis/v9"
	prom  = "github.com/prometheus/client_golang/prometheus"
)

// deps lists the packages pkg depends on, by go list.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	out, err := exec.Command(goTool, "list", "-deps", mod+pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

// mustNot fails for each of bad that pkg depends on; a bad name starting
// with internal/ is a package of this module.
func mustNot(t *testing.T, pkg string, bad ...string) {
	t.Helper()
	d := deps(t, pkg)
	for _, b := range bad {
		full := b
		if rest, ok := strings.CutPrefix(b, "internal/"); ok {
			full = mod + rest
		}
		if slices.Contains(d, full) {
			t.Errorf("internal/%s depends on %s", pkg, b)
		}
	}
}

// TestDecisionsDoNoIO: the decision packages the gateway and the simulator
// share import no net/http and no store client.
func TestDecisionsDoNoIO(t *testing.T) {
	for _, pkg := range []string{"health", "balance", "ring", "limit", "cache", "sim", "window"} {
		mustNot(t, pkg, "net/http", redis)
	}
}

// TestSimulatorDrivesDecisionsOnly: the simulator imports neither the
// gateway, nor the fleet's I/O side, nor a store (package limit's Table is
// the memory store's pure core; the Redis store lives elsewhere).
func TestSimulatorDrivesDecisionsOnly(t *testing.T) {
	mustNot(t, "sim", "internal/gateway", "internal/upstream", "internal/store", "internal/idem", "internal/cache", "internal/session", "internal/identity", "internal/limit/redisstore", "internal/limit/limittest", "internal/cache/rediscache", "internal/session/redistasks", "internal/streams/redisstreams", redis)
}

// TestConfigIsSchemaOnly: the configuration is schema, defaults and
// validation; what it configures is built in cmd/mcpfleet. So the packages
// that read it (lbconfig prints text) bring no gateway, HTTP engine, store
// client or metrics along.
func TestConfigIsSchemaOnly(t *testing.T) {
	for _, pkg := range []string{"config", "lbconfig"} {
		mustNot(t, pkg, "internal/gateway", "internal/h1", "internal/idem", "internal/store", "internal/limit/redisstore", "internal/cache/rediscache", "internal/session/redistasks", "internal/streams/redisstreams", redis, prom)
	}
}

// TestToolsDoNotImportTheGateway: tools that only print, simulate or probe
// from outside stand apart from the gateway they measure.
func TestToolsDoNotImportTheGateway(t *testing.T) {
	for _, pkg := range []string{"sim", "lab", "lbconfig", "probe", "config", "testserver", "ring", "balance", "admin"} {
		mustNot(t, pkg, "internal/gateway")
	}
}

// TestStoresStayApart: the packages the gateway's decisions live in reach a
// store only through an interface; the Redis implementations are their own
// packages.
func TestStoresStayApart(t *testing.T) {
	for _, pkg := range []string{"session", "identity", "upstream", "mcpmsg", "sse", "h1"} {
		mustNot(t, pkg, redis)
	}
}

// TestStdioStandsApart: the stdio children and their bridges are reached
// by the gateway as replicas are, over HTTP: the package imports neither
// the gateway nor the fleet, so the gateway needs no change for them.
func TestStdioStandsApart(t *testing.T) {
	mustNot(t, "stdio", "internal/gateway", "internal/upstream", "internal/admin", redis)
}

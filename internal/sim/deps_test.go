package sim

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// deps lists the packages pkg depends on, by go list.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	out, err := exec.Command(goTool, "list", "-deps", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

// TestArrowsThatMustNotExist states the layering: the decision packages the
// simulator drives import no net/http, and the simulator imports neither
// the gateway, nor the fleet's I/O side, nor a store (package limit's Table
// is the memory store's pure core; the Redis store lives elsewhere).
func TestArrowsThatMustNotExist(t *testing.T) {
	const mod = "github.com/mcpfleet/mcpfleet/internal/"
	const redis = "github.com/redis/go-redis/v9"
	for _, pkg := range []string{"health", "balance", "ring", "limit", "cache", "sim"} {
		if d := deps(t, mod+pkg); slices.Contains(d, "net/http") {
			t.Errorf("%s depends on net/http", pkg)
		}
	}
	d := deps(t, mod+"sim")
	for _, bad := range []string{"gateway", "upstream", "store", "idem", "cache", "session", "identity", "limit/redisstore", "limit/limittest"} {
		if slices.Contains(d, mod+bad) {
			t.Errorf("sim depends on internal/%s", bad)
		}
	}
	if slices.Contains(d, redis) {
		t.Errorf("sim depends on %s", redis)
	}
	// The pure decisions bring no store with them.
	for _, pkg := range []string{"limit", "cache"} {
		if slices.Contains(deps(t, mod+pkg), redis) {
			t.Errorf("%s depends on %s", pkg, redis)
		}
	}
	// Tools that only print or simulate do not import the gateway.
	for _, pkg := range []string{"sim", "lab", "ring", "balance"} {
		if slices.Contains(deps(t, mod+pkg), mod+"gateway") {
			t.Errorf("%s depends on internal/gateway", pkg)
		}
	}
}

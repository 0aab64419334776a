package probe

import (
	"net/http/httptest"
	"net/url"
	"sort"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/gateway"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// startGateway puts mcpfleet's own gateway (default policy: hash with
// bounded loads) in front of the named replicas of fleet, with a fixed salt
// so that two gateways route alike.
func startGateway(t *testing.T, fleet map[string]*url.URL, names ...string) string {
	t.Helper()
	sort.Strings(names)
	var specs []upstream.Spec
	for _, n := range names {
		specs = append(specs, upstream.Spec{Name: n, URL: fleet[n].String() + "/mcp"})
	}
	fl, err := upstream.New(specs)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(fl, nil, &gateway.Options{RoutingSalt: []byte("probe-test-salt-0123456789")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.Close)
	hs := httptest.NewServer(gw)
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

// TestMcpfleetProvesAffinity: probe through mcpfleet itself is sticky,
// spreads over all three replicas, and when a replica leaves only its own
// identities move.
func TestMcpfleetProvesAffinity(t *testing.T) {
	fleet := startFleet(t, "r1", "r2", "r3")
	first, s := run(t, startGateway(t, fleet, "r1", "r2", "r3"))
	if err := s.ExpectSticky(); err != nil {
		t.Fatalf("through mcpfleet: %v", err)
	}
	if len(s.Replicas) != 3 {
		t.Errorf("identities reached %d replicas, want 3", len(s.Replicas))
	}
	base := first.Baseline()
	second, s2 := run(t, startGateway(t, fleet, "r1", "r2"))
	if err := s2.ExpectSticky(); err != nil {
		t.Fatalf("after removing r3: %v", err)
	}
	m, err := base.Compare(second)
	if err != nil {
		t.Fatal(err)
	}
	if m.Moved == 0 || len(m.From) != 1 || m.From["r3"] != m.Moved {
		t.Errorf("moved %d from %v; want only r3's identities", m.Moved, m.From)
	}
	t.Logf("through mcpfleet: stickiness %.0f%%, spread max/mean %.2f; removing r3 moved %.0f%%", 100*s.Stickiness, s.MaxOverMean, 100*m.Share)
}

package gateway

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testserver"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestDrainingReplicaTakesNoNewWork: once a replica's /health says
// draining, new sessions and stateless requests go elsewhere, while the
// sessions pinned to it go on.
func TestDrainingReplicaTakesNoNewWork(t *testing.T) {
	var servers []*testserver.Server
	var specs []upstream.Spec
	for _, name := range []string{"replica-a", "replica-b"} {
		s, _ := testserver.New(name, nil)
		hs := httptest.NewServer(s.Handler())
		t.Cleanup(hs.Close)
		servers = append(servers, s)
		specs = append(specs, upstream.Spec{Name: name, URL: hs.URL + "/mcp"})
	}
	fl, err := upstream.New(specs)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := New(fl, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.Close)
	checker, err := upstream.NewChecker(fl, &upstream.CheckOptions{Interval: 20 * time.Millisecond, Timeout: 15 * time.Millisecond, OnChange: gw.Metrics().HealthChanged})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go checker.Run(ctx)
	front := newFront(gw)
	defer front.Close()

	legacy := newRaw(t, front.URL+"/mcp", "2025-11-25")
	legacy.initialize()
	home := whoamiAs(t, legacy, nil)
	drainIdx := 0
	if home == "replica-b" {
		drainIdx = 1
	}
	servers[drainIdx].SetDraining()
	deadline := time.Now().Add(3 * time.Second)
	for fl.Snapshot().At(drainIdx).State() != upstream.StateDraining {
		if time.Now().After(deadline) {
			t.Fatal("the checker never saw the replica draining")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := whoamiAs(t, legacy, nil); got != home {
		t.Errorf("the pinned session moved from %s to %s", home, got)
	}
	modern := newRaw(t, front.URL+"/mcp", "2026-07-28")
	for i := range 10 {
		if got := whoamiAs(t, modern, map[string]string{"Authorization": "Bearer user-" + string(rune('a'+i))}); got == home {
			t.Fatalf("new work reached the draining replica %s", home)
		}
	}
	fresh := newRaw(t, front.URL+"/mcp", "2025-11-25")
	fresh.initialize()
	if got := whoamiAs(t, fresh, nil); got == home {
		t.Errorf("a new session started on the draining replica")
	}
	if n := testutil.ToFloat64(gw.metrics.healthChanges.WithLabelValues(home, "up", "draining")); n != 1 {
		t.Errorf("health change up->draining counted %v times", n)
	}
	rec := httptest.NewRecorder()
	gw.Metrics().Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if !strings.Contains(rec.Body.String(), `mcpfleet_replica_state{replica="`+home+`",state="draining"} 1`) {
		t.Error("the state gauge does not show the draining replica")
	}
}

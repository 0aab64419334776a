package gateway

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
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
	checker, err := upstream.NewChecker(fl, &upstream.CheckOptions{Interval: 20 * time.Millisecond, Timeout: time.Second, OnChange: gw.Metrics().HealthChanged})
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

// TestReadyzAsksTheStore: /readyz is 503 while the store check fails and
// 200 again once it answers, asking at most once a second however many
// probes come; /healthz stays 200 throughout.
func TestReadyzAsksTheStore(t *testing.T) {
	var storeDown atomic.Bool
	var asked atomic.Int32
	f := startFleet(t, 1, &Options{StoreCheck: func(ctx context.Context) error {
		asked.Add(1)
		if _, ok := ctx.Deadline(); !ok {
			t.Error("the store check has no deadline")
		}
		if storeDown.Load() {
			return errors.New("connection refused")
		}
		return nil
	}})
	now := time.Unix(1000, 0)
	f.gw.stores.now = func() time.Time { return now }
	get := func(p string) (int, string) {
		resp, err := http.Get(f.front.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/readyz"); code != 200 {
		t.Fatalf("/readyz = %d with the store up", code)
	}
	storeDown.Store(true)
	if code, _ := get("/readyz"); code != 200 {
		t.Fatalf("/readyz = %d within the second of the last good answer", code)
	}
	now = now.Add(time.Second)
	for range 5 {
		if code, body := get("/readyz"); code != 503 || !strings.Contains(body, "store") {
			t.Fatalf("/readyz = %d %q with the store down", code, body)
		}
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Errorf("/healthz = %d with the store down: liveness must not depend on it", code)
	}
	if n := asked.Load(); n != 2 {
		t.Errorf("store asked %d times for 7 probes over two seconds, want 2", n)
	}
	storeDown.Store(false)
	now = now.Add(time.Second)
	if code, _ := get("/readyz"); code != 200 {
		t.Errorf("/readyz = %d once the store answers again", code)
	}
}

// TestReadyzWithoutReplicas: with no replica that can take new work (the
// only one drains) /readyz is 503.
func TestReadyzWithoutReplicas(t *testing.T) {
	f := startFleet(t, 1, nil)
	checker, err := upstream.NewChecker(f.gw.fleet, &upstream.CheckOptions{Interval: 20 * time.Millisecond, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go checker.Run(ctx)
	f.servers[0].SetDraining()
	deadline := time.Now().Add(3 * time.Second)
	for f.gw.fleet.Snapshot().At(0).State() != upstream.StateDraining {
		if time.Now().After(deadline) {
			t.Fatal("the checker never saw the replica draining")
		}
		time.Sleep(10 * time.Millisecond)
	}
	resp, err := http.Get(f.front.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Errorf("/readyz = %d with the only replica down", resp.StatusCode)
	}
}

// TestDrainingClosesConnections: once draining, answers say
// Connection: close, so that pooled connections leave before the listener
// closes; before, they are kept alive.
func TestDrainingClosesConnections(t *testing.T) {
	f := startFleet(t, 1, nil)
	get := func() *http.Response {
		resp, err := http.Get(f.front.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	if resp := get(); resp.Close {
		t.Fatal("a connection closed before draining")
	}
	f.gw.SetDraining()
	if resp := get(); !resp.Close || resp.StatusCode != 200 {
		t.Errorf("draining: Close %v, status %d; want Connection: close on a 200", resp.Close, resp.StatusCode)
	}
}

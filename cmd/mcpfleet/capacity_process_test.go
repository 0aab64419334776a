package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/store/redistest"
	"github.com/mcpfleet/mcpfleet/internal/testserver"
)

// cappedReplicas starts three replicas, each counting its own calls, and
// returns their gauges and the upstreams lines with max_inflight: 2.
func cappedReplicas(t *testing.T) ([]*testserver.Gauge, string) {
	t.Helper()
	var gauges []*testserver.Gauge
	var b strings.Builder
	b.WriteString("upstreams:\n")
	for _, name := range []string{"a", "b", "c"} {
		g := &testserver.Gauge{}
		s, err := testserver.New(name, &testserver.Options{Calls: g})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(s.Handler())
		t.Cleanup(hs.Close)
		gauges = append(gauges, g)
		fmt.Fprintf(&b, "  - {name: %s, url: '%s/mcp', max_inflight: 2}\n", name, hs.URL)
	}
	return gauges, b.String()
}

// capacityRun is what 24 callers saw calling a 0.5 s tool in a loop.
type capacityRun struct {
	ok, refused int64
	peaks       []int
}

// loopCallers runs 24 callers over the gateways for d, each calling sleep
// 0.5 s in a loop and waiting out a 503 as its Retry-After says (at most
// 200 ms). Any answer but 200, or 503 with Retry-After, fails the test.
func loopCallers(t *testing.T, gws []string, gauges []*testserver.Gauge, d time.Duration) capacityRun {
	t.Helper()
	var run capacityRun
	var ok, refused atomic.Int64
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for i := range 24 {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				a, err := tryCall(gws[i%len(gws)], fmt.Sprintf("caller-%d", i), 0.5)
				switch {
				case err != nil:
					t.Errorf("caller %d: %v", i, err)
					return
				case a.status == http.StatusOK:
					ok.Add(1)
				case a.status == http.StatusServiceUnavailable && a.retryAfter != "" && a.retryMs > 0:
					refused.Add(1)
					if secs, err := strconv.Atoi(a.retryAfter); err != nil || secs < 1 {
						t.Errorf("Retry-After %q: want whole seconds", a.retryAfter)
					}
					time.Sleep(time.Duration(min(a.retryMs, 200)) * time.Millisecond)
				default:
					t.Errorf("caller %d: %d (Retry-After %q) %s: want 200, or 503 with Retry-After", i, a.status, a.retryAfter, a.body)
					return
				}
			}
		})
	}
	wg.Wait()
	run.ok, run.refused = ok.Load(), refused.Load()
	for _, g := range gauges {
		run.peaks = append(run.peaks, g.Peak("sleep"))
	}
	return run
}

// TestMaxInflightAcrossGatewayProcesses: three gateway processes sharing a
// Redis in front of three replicas of max_inflight 2, 24 callers each
// calling a 0.5 s tool in a loop for 10 s. No replica ever runs more than 2
// calls at once (counted at the replicas), and every call is answered: 200,
// or 503 with Retry-After once it waited queue_timeout. With the memory
// store each gateway holds the cap on its own, and a replica runs more
// than 2 at once (up to 6).
func TestMaxInflightAcrossGatewayProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes and a redis-server")
	}
	// Its callers mostly wait on 0.5 s calls: it overlaps with the other
	// tests that wait.
	t.Parallel()
	const place = 0.5 // seconds a call holds its place
	t.Run("redis", func(t *testing.T) {
		gauges, ups := cappedReplicas(t)
		gws, _ := startGateways(t, 3, ups+"secret_file: "+writeSecret(t)+"\nredis_url: redis://"+redistest.Start(t)+"/0\n"+
			"limits: {store: redis}\nqueue_timeout: 1s\n")
		const d = 10 * time.Second
		run := loopCallers(t, gws, gauges, d)
		t.Logf("shared store: %d answered, %d refused (503) in %v; peaks at the replicas %v", run.ok, run.refused, d, run.peaks)
		for i, p := range run.peaks {
			if p > 2 {
				t.Errorf("replica %d ran %d calls at once, over its max_inflight 2 held by three gateways", i, p)
			}
		}
		// Six places of 0.5 s for 10 s hold 120 calls; half of that shows
		// the places were used, not merely guarded.
		if full := 6 * d.Seconds() / place; float64(run.ok) < full/2 {
			t.Errorf("%d calls answered in %v, want at least half of the %.0f six places hold", run.ok, d, full)
		}
		if run.refused == 0 {
			t.Errorf("24 callers on 6 places with a 1 s queue: no call was refused, so the queue bound was never met")
		}
	})
	t.Run("memory", func(t *testing.T) {
		gauges, ups := cappedReplicas(t)
		gws, _ := startGateways(t, 3, ups+"queue_timeout: 1s\n")
		run := loopCallers(t, gws, gauges, 3*time.Second)
		t.Logf("a store per gateway: %d answered, %d refused; peaks at the replicas %v", run.ok, run.refused, run.peaks)
		most := 0
		for i, p := range run.peaks {
			most = max(most, p)
			if p > 6 {
				t.Errorf("replica %d ran %d at once, over 3 gateways × 2", i, p)
			}
		}
		if most <= 2 {
			t.Errorf("peaks %v: with a memory store per gateway a replica should run more than 2 at once", run.peaks)
		}
	})
}

package gateway

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/limit"
	"github.com/mcpfleet/mcpfleet/internal/testserver"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// cappedFleet is gateways sharing one capacity store in front of replicas
// that each count the calls they run.
type cappedFleet struct {
	fronts []*frontServer
	gws    []*Gateway
	calls  []*testserver.Gauge // by replica
}

func startCapped(t *testing.T, replicas int, opts Options, limiters ...*limit.Limiter) *cappedFleet {
	t.Helper()
	f := &cappedFleet{}
	var specs []upstream.Spec
	for i := range replicas {
		name := fmt.Sprintf("replica-%c", 'a'+i)
		g := &testserver.Gauge{}
		s, err := testserver.New(name, &testserver.Options{Calls: g})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(s.Handler())
		t.Cleanup(hs.Close)
		f.calls = append(f.calls, g)
		specs = append(specs, upstream.Spec{Name: name, URL: hs.URL + "/mcp"})
	}
	for _, l := range limiters {
		t.Cleanup(l.Close)
		o := opts
		o.Capacity = l
		gw := startGatewayOn(t, specs, &o, &syncBuffer{})
		front := newFront(gw)
		t.Cleanup(front.Close)
		f.gws, f.fronts = append(f.gws, gw), append(f.fronts, front)
	}
	return f
}

// burst sends n sleep calls of d at once, spread over the gateways, and
// returns their answers.
func (f *cappedFleet) burst(t *testing.T, n int, d time.Duration) []limited {
	t.Helper()
	out := make([]limited, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r := newRaw(t, f.fronts[i%len(f.fronts)].URL+"/mcp", "2026-07-28")
			out[i] = callTool(t, r, i+1, "sleep", map[string]any{"seconds": d.Seconds()}, nil)
		})
	}
	wg.Wait()
	return out
}

func (f *cappedFleet) peaks() []int {
	var p []int
	for _, g := range f.calls {
		p = append(p, g.Peak("sleep"))
	}
	return p
}

// A replica at its max_inflight takes no more work: with no queue, the
// calls past every replica's places are answered 503 with Retry-After at
// once, and the replicas never run more than their cap.
func TestMaxInflightRefusesWithoutAQueue(t *testing.T) {
	f := startCapped(t, 2, Options{DefaultMaxInflight: 1}, limit.NewLimiter(limit.NewMemory(0), nil))
	got := f.burst(t, 6, 1500*time.Millisecond)
	ok, refused := 0, 0
	for _, g := range got {
		switch g.status {
		case http.StatusOK:
			ok++
		case http.StatusServiceUnavailable:
			refused++
			secs, err := strconv.Atoi(g.retryAfter)
			if err != nil || secs < 1 || g.data.RetryAfterMs == nil || *g.data.RetryAfterMs <= 0 {
				t.Errorf("refusal without a usable Retry-After (%q) or retryAfterMs: %s", g.retryAfter, g.body)
			}
		default:
			t.Errorf("status %d: %s", g.status, g.body)
		}
	}
	if ok != 2 || refused != 4 {
		t.Errorf("%d answered, %d refused; want 2 and 4 (two replicas of one place each)", ok, refused)
	}
	for i, p := range f.peaks() {
		if p > 1 {
			t.Errorf("replica %d ran %d calls at once, over its max_inflight 1", i, p)
		}
	}
	if n := testutil.ToFloat64(f.gws[0].metrics.capacityRefused.WithLabelValues("full")); n != 4 {
		t.Errorf("mcpfleet_capacity_refused_total{reason=full} = %v, want 4", n)
	}
}

// With a queue, calls wait for a place instead: every call is answered,
// none runs past the cap, and the per-replica caps of a named replica
// override the default.
func TestMaxInflightQueuesUntilAPlaceFrees(t *testing.T) {
	f := startCapped(t, 2, Options{MaxInflight: map[string]int{"replica-b": 2}, DefaultMaxInflight: 1, QueueTimeout: 10 * time.Second},
		limit.NewLimiter(limit.NewMemory(0), nil))
	start := time.Now()
	got := f.burst(t, 9, 300*time.Millisecond)
	took := time.Since(start)
	for _, g := range got {
		if g.status != http.StatusOK {
			t.Errorf("status %d: %s", g.status, g.body)
		}
	}
	p := f.peaks()
	if p[0] > 1 || p[1] > 2 {
		t.Errorf("peaks %v, over the caps 1 and 2", p)
	}
	// Nine calls of 0.3 s on three places take three rounds at least.
	if took < 900*time.Millisecond {
		t.Errorf("nine calls on three places took %v: the cap did not hold them", took)
	}
	if n := testutil.CollectAndCount(f.gws[0].metrics.capacityWait); n != 1 {
		t.Errorf("queue histogram has %d series", n)
	}
}

// The cap holds over every gateway that shares a store: two gateways in
// front of one replica of max_inflight 2 never run more than 2 calls on
// it, and give every call an answer. Each gateway alone with its own
// store lets 2 through: 4 at once.
func TestMaxInflightHoldsAcrossGateways(t *testing.T) {
	shared := limit.NewMemory(0)
	f := startCapped(t, 1, Options{DefaultMaxInflight: 2, QueueTimeout: 10 * time.Second},
		limit.NewLimiter(shared, nil), limit.NewLimiter(shared, nil))
	for _, g := range f.burst(t, 8, 300*time.Millisecond) {
		if g.status != http.StatusOK {
			t.Errorf("shared store: status %d: %s", g.status, g.body)
		}
	}
	if p := f.peaks()[0]; p != 2 {
		t.Errorf("shared store: the replica ran %d at once, want exactly its cap 2", p)
	}

	apart := startCapped(t, 1, Options{DefaultMaxInflight: 2, QueueTimeout: 10 * time.Second},
		limit.NewLimiter(limit.NewMemory(0), nil), limit.NewLimiter(limit.NewMemory(0), nil))
	apart.burst(t, 8, time.Second)
	if p := apart.peaks()[0]; p <= 2 || p > 4 {
		t.Errorf("a store per gateway: the replica ran %d at once, want more than 2 and at most 4 (2 per gateway)", p)
	}
}

// A queue that is full, or a wait that outlasts queue_timeout, is answered
// 503 with Retry-After; the calls that got a place still run.
func TestMaxInflightQueueBounds(t *testing.T) {
	f := startCapped(t, 1, Options{DefaultMaxInflight: 1, QueueTimeout: time.Second, QueueSize: 1},
		limit.NewLimiter(limit.NewMemory(0), nil))
	got := f.burst(t, 4, 2*time.Second)
	ok := 0
	for _, g := range got {
		switch {
		case g.status == http.StatusOK:
			ok++
		case g.status != http.StatusServiceUnavailable || g.retryAfter == "":
			t.Errorf("status %d Retry-After %q: %s", g.status, g.retryAfter, g.body)
		}
	}
	if ok != 1 {
		t.Errorf("%d calls answered, want 1 (one place, every wait shorter than the call)", ok)
	}
	m := f.gws[0].metrics.capacityRefused
	full, timeout := testutil.ToFloat64(m.WithLabelValues("queue_full")), testutil.ToFloat64(m.WithLabelValues("timeout"))
	if full != 2 || timeout != 1 {
		t.Errorf("refused: %v queue_full, %v timeout; want 2 and 1 (a queue of one)", full, timeout)
	}
}

// A session's calls wait for a place at their own replica, and are never
// sent elsewhere.
func TestMaxInflightHoldsSessionsAtTheirReplica(t *testing.T) {
	f := startCapped(t, 2, Options{DefaultMaxInflight: 1, QueueTimeout: 10 * time.Second}, limit.NewLimiter(limit.NewMemory(0), nil))
	r := newRaw(t, f.fronts[0].URL+"/mcp", "2025-11-25")
	r.initialize()
	var wg sync.WaitGroup
	got := make([]limited, 3)
	for i := range got {
		wg.Go(func() { got[i] = callTool(t, r, 10+i, "sleep", map[string]any{"seconds": 0.3}, nil) })
	}
	wg.Wait()
	for _, g := range got {
		if g.status != http.StatusOK {
			t.Errorf("status %d: %s", g.status, g.body)
		}
	}
	p := f.peaks()
	if p[0]+p[1] != 1 {
		t.Errorf("peaks %v: a session's three calls ran at one replica, one at a time", p)
	}
}

// A reload's caps replace the old ones: a replica whose cap is raised
// takes as many more at once; a gateway without a capacity store refuses
// to turn one on.
func TestSetMaxInflight(t *testing.T) {
	f := startCapped(t, 1, Options{MaxInflight: map[string]int{"replica-a": 1}}, limit.NewLimiter(limit.NewMemory(0), nil))
	if err := f.gws[0].SetMaxInflight(map[string]int{"replica-a": 3}); err != nil {
		t.Fatal(err)
	}
	for _, g := range f.burst(t, 3, time.Second) {
		if g.status != http.StatusOK {
			t.Errorf("after raising the cap to 3: status %d: %s", g.status, g.body)
		}
	}
	if p := f.peaks()[0]; p != 3 {
		t.Errorf("peak %d, want the new cap 3", p)
	}
	plain := startFleet(t, 1, nil)
	if err := plain.gw.SetMaxInflight(map[string]int{"replica-a": 2}); err != ErrCapacityOff {
		t.Errorf("turning a cap on by reload: %v, want ErrCapacityOff", err)
	}
}

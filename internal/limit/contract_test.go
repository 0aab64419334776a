package limit

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/store"
	"github.com/mcpfleet/mcpfleet/internal/store/redistest"
	"github.com/mcpfleet/mcpfleet/internal/testproc"
)

// harness is one store under test and the means to move its clock.
type harness struct {
	store   Store
	advance func(time.Duration) // a fake clock, or a real sleep for Redis
}

// The contract every Store meets, with the same decisions from each.
func testStore(t *testing.T, newHarness func(t *testing.T) harness) {
	tests := []struct {
		name string
		run  func(t *testing.T, h harness)
	}{
		{"burst then refuse with the bucket's wait", testBurst},
		{"the bucket refills at the rate", testRefill},
		{"concurrency holds until release", testConcurrency},
		{"a tool cap holds across callers", testToolCap},
		{"a refusal consumes nothing", testAllOrNothing},
		{"an unrenewed lease lapses", testLeaseLapse},
		{"a renewed lease holds", testRenewHolds},
		{"a renewal after release takes nothing", testRenewAfterRelease},
		{"callers are apart", testCallersApart},
		{"concurrent acquires never exceed the limit", testConcurrentAcquires},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, newHarness(t)) })
	}
}

func acquire(t *testing.T, s Store, caller, tool string, c Check) (Decision, Lease) {
	t.Helper()
	d, l, err := s.Acquire(context.Background(), caller, tool, c)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	if d.Allowed != l.Held() && c.leases() {
		t.Fatalf("Acquire: allowed %v but lease held %v", d.Allowed, l.Held())
	}
	return d, l
}

func wantAllowed(t *testing.T, d Decision, want bool) {
	t.Helper()
	if d.Allowed != want {
		t.Fatalf("decision %+v: allowed = %v, want %v", d, d.Allowed, want)
	}
}

func testBurst(t *testing.T, h harness) {
	c := Check{Rate: 5, Burst: 5}
	for i := range 5 {
		d, _ := acquire(t, h.store, "a", "", c)
		wantAllowed(t, d, true)
		if d.Limit != 5 || d.Remaining != 4-i {
			t.Fatalf("call %d: limit %d remaining %d, want 5 and %d", i, d.Limit, d.Remaining, 4-i)
		}
	}
	d, _ := acquire(t, h.store, "a", "", c)
	wantAllowed(t, d, false)
	if d.Reason != ReasonRate || d.RetryAfter <= 0 || d.RetryAfter > 200*time.Millisecond || d.Limit != 5 || d.Remaining != 0 {
		t.Fatalf("sixth call: %+v, want rate, 0 < retry <= 200ms, limit 5, remaining 0", d)
	}
}

func testRefill(t *testing.T, h harness) {
	c := Check{Rate: 10, Burst: 1}
	d, _ := acquire(t, h.store, "a", "", c)
	wantAllowed(t, d, true)
	d, _ = acquire(t, h.store, "a", "", c)
	wantAllowed(t, d, false)
	h.advance(d.RetryAfter + 20*time.Millisecond)
	d, _ = acquire(t, h.store, "a", "", c)
	wantAllowed(t, d, true)
}

func testConcurrency(t *testing.T, h harness) {
	c := Check{Concurrency: 2, LeaseTTL: time.Minute}
	_, l1 := acquire(t, h.store, "a", "", c)
	d, _ := acquire(t, h.store, "a", "", c)
	wantAllowed(t, d, true)
	d, _ = acquire(t, h.store, "a", "", c)
	wantAllowed(t, d, false)
	if d.Reason != ReasonConcurrency || d.RetryAfter != BusyRetry || d.Limit != 2 {
		t.Fatalf("third call: %+v, want concurrency, retry %v, limit 2", d, BusyRetry)
	}
	if err := h.store.Release(context.Background(), l1); err != nil {
		t.Fatalf("Release: %v", err)
	}
	d, _ = acquire(t, h.store, "a", "", c)
	wantAllowed(t, d, true)
}

func testToolCap(t *testing.T, h harness) {
	c := Check{ToolCap: 3, LeaseTTL: time.Minute}
	for _, caller := range []string{"a", "b", "c"} {
		d, _ := acquire(t, h.store, caller, "work", c)
		wantAllowed(t, d, true)
	}
	d, _ := acquire(t, h.store, "d", "work", c)
	if d.Allowed || d.Reason != ReasonTool || d.Limit != 3 {
		t.Fatalf("fourth caller: %+v, want refused by the tool cap of 3", d)
	}
	d, _ = acquire(t, h.store, "d", "other", c)
	wantAllowed(t, d, true)
}

func testAllOrNothing(t *testing.T, h harness) {
	c := Check{Rate: 0.01, Burst: 2, Concurrency: 1, LeaseTTL: time.Minute}
	_, l := acquire(t, h.store, "a", "", c) // 1 token left
	d, _ := acquire(t, h.store, "a", "", c)
	if d.Allowed || d.Reason != ReasonConcurrency {
		t.Fatalf("second: %+v, want refused by concurrency", d)
	}
	if err := h.store.Release(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	d, _ = acquire(t, h.store, "a", "", c) // the refusal left the token
	wantAllowed(t, d, true)
	if d.Remaining != 0 {
		t.Fatalf("remaining %d, want 0", d.Remaining)
	}
}

func testLeaseLapse(t *testing.T, h harness) {
	c := Check{Concurrency: 1, LeaseTTL: 300 * time.Millisecond}
	acquire(t, h.store, "a", "", c)
	d, _ := acquire(t, h.store, "a", "", c)
	wantAllowed(t, d, false)
	if d.RetryAfter <= 0 || d.RetryAfter > BusyRetry {
		t.Fatalf("retry %v, want (0, %v]", d.RetryAfter, BusyRetry)
	}
	h.advance(400 * time.Millisecond)
	d, _ = acquire(t, h.store, "a", "", c)
	wantAllowed(t, d, true)
}

func testRenewHolds(t *testing.T, h harness) {
	c := Check{Concurrency: 1, ToolCap: 1, LeaseTTL: 400 * time.Millisecond}
	_, l := acquire(t, h.store, "a", "work", c)
	for range 3 {
		h.advance(200 * time.Millisecond)
		if err := h.store.Renew(context.Background(), []Lease{l}, c); err != nil {
			t.Fatalf("Renew: %v", err)
		}
	}
	d, _ := acquire(t, h.store, "a", "x", c)
	if d.Allowed || d.Reason != ReasonConcurrency {
		t.Fatalf("caller after renewals: %+v, want refused by concurrency", d)
	}
	d, _ = acquire(t, h.store, "b", "work", c)
	if d.Allowed || d.Reason != ReasonTool {
		t.Fatalf("tool after renewals: %+v, want refused by the tool cap", d)
	}
}

func testRenewAfterRelease(t *testing.T, h harness) {
	c := Check{Concurrency: 1, LeaseTTL: time.Minute}
	_, l := acquire(t, h.store, "a", "", c)
	ctx := context.Background()
	if err := h.store.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	if err := h.store.Release(ctx, l); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	if err := h.store.Renew(ctx, []Lease{l}, c); err != nil {
		t.Fatal(err)
	}
	d, _ := acquire(t, h.store, "a", "", c)
	wantAllowed(t, d, true)
}

func testCallersApart(t *testing.T, h harness) {
	c := Check{Rate: 1, Burst: 1, Concurrency: 1, LeaseTTL: time.Minute}
	d, _ := acquire(t, h.store, "a", "", c)
	wantAllowed(t, d, true)
	d, _ = acquire(t, h.store, "b", "", c)
	wantAllowed(t, d, true)
	d, _ = acquire(t, h.store, "a", "", c)
	wantAllowed(t, d, false)
}

func testConcurrentAcquires(t *testing.T, h harness) {
	c := Check{Rate: 1000, Burst: 7, Concurrency: 3, LeaseTTL: time.Minute}
	var mu sync.Mutex
	allowed := 0
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			d, _, err := h.store.Acquire(context.Background(), "a", "", c)
			if err != nil {
				t.Error(err)
				return
			}
			if d.Allowed {
				mu.Lock()
				allowed++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if allowed != 3 {
		t.Fatalf("%d of 20 concurrent acquires allowed, want exactly 3", allowed)
	}
}

// fakeClock is a clock that moves only when told.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.mu.Unlock()
}

func TestMemoryContract(t *testing.T) {
	testStore(t, func(t *testing.T) harness {
		clock := &fakeClock{now: t0}
		m := NewMemory(0)
		m.now = clock.Now
		return harness{store: m, advance: clock.Advance}
	})
}

func TestRedisContract(t *testing.T) {
	addr := redistest.Start(t)
	testStore(t, func(t *testing.T) harness {
		return harness{store: newRedisStore(t, addr, "test:"+t.Name()+":"), advance: time.Sleep}
	})
}

func newRedisStore(t testing.TB, addr, prefix string) *Redis {
	t.Helper()
	client, err := store.NewRedisClient("redis://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return NewRedis(client, prefix)
}

func TestRedisUnavailable(t *testing.T) {
	s := newRedisStore(t, testproc.FreeAddr(t), "x:")
	_, _, err := s.Acquire(context.Background(), "a", "", Check{Rate: 1, Burst: 1})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Acquire against no server: %v, want ErrUnavailable", err)
	}
	if err := s.Release(context.Background(), Lease{Caller: "a", ID: "x"}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Release against no server: %v, want ErrUnavailable", err)
	}
	if err := s.Renew(context.Background(), []Lease{{Caller: "a", ID: "x"}}, Check{LeaseTTL: time.Second}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Renew against no server: %v, want ErrUnavailable", err)
	}
}

func TestRedisKeyLayout(t *testing.T) {
	addr := redistest.Start(t)
	s := newRedisStore(t, addr, "p:")
	ctx := context.Background()
	c := Check{Rate: 2, Burst: 4, Concurrency: 2, ToolCap: 2, LeaseTTL: 3 * time.Second}
	if _, _, err := s.Acquire(ctx, "0123abcd", "work", c); err != nil {
		t.Fatal(err)
	}
	keys, err := s.client.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"p:{c:0123abcd}:b": true, "p:{c:0123abcd}:l": true, "p:{t:work}:l": true}
	if len(keys) != len(want) {
		t.Fatalf("keys %q, want %v", keys, want)
	}
	for _, k := range keys {
		if !want[k] {
			t.Fatalf("unexpected key %q", k)
		}
		ttl, err := s.client.PTTL(ctx, k).Result()
		if err != nil || ttl <= 0 || ttl > 5*time.Second {
			t.Fatalf("key %q expires in %v (%v), want within 5s", k, ttl, err)
		}
	}
}

// Package limittest is the contract every limit.Store meets, for the tests of
// each store: the same cases, and the same decisions from each.
package limittest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/limit"
)

// Harness is one store under test and the means to move its clock.
type Harness struct {
	Store limit.Store
	// Advance moves the store's clock: a fake clock's, or a real sleep for
	// a store that reads the server's clock.
	Advance func(time.Duration)
}

// Run runs every case of the contract, each on a fresh store from
// newHarness.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	tests := []struct {
		name string
		run  func(t *testing.T, h Harness)
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

func acquire(t *testing.T, s limit.Store, caller, tool string, c limit.Check) (limit.Decision, limit.Lease) {
	t.Helper()
	d, l, err := s.Acquire(context.Background(), caller, tool, c)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	if d.Allowed != l.Held() && c.TakesLease() {
		t.Fatalf("Acquire: allowed %v but lease held %v", d.Allowed, l.Held())
	}
	return d, l
}

func wantAllowed(t *testing.T, d limit.Decision, want bool) {
	t.Helper()
	if d.Allowed != want {
		t.Fatalf("decision %+v: allowed = %v, want %v", d, d.Allowed, want)
	}
}

func testBurst(t *testing.T, h Harness) {
	c := limit.Check{Rate: 5, Burst: 5}
	for i := range 5 {
		d, _ := acquire(t, h.Store, "a", "", c)
		wantAllowed(t, d, true)
		if d.Limit != 5 || d.Remaining != 4-i {
			t.Fatalf("call %d: limit %d remaining %d, want 5 and %d", i, d.Limit, d.Remaining, 4-i)
		}
	}
	d, _ := acquire(t, h.Store, "a", "", c)
	wantAllowed(t, d, false)
	if d.Reason != limit.ReasonRate || d.RetryAfter <= 0 || d.RetryAfter > 200*time.Millisecond || d.Limit != 5 || d.Remaining != 0 {
		t.Fatalf("sixth call: %+v, want rate, 0 < retry <= 200ms, limit 5, remaining 0", d)
	}
}

func testRefill(t *testing.T, h Harness) {
	c := limit.Check{Rate: 10, Burst: 1}
	d, _ := acquire(t, h.Store, "a", "", c)
	wantAllowed(t, d, true)
	d, _ = acquire(t, h.Store, "a", "", c)
	wantAllowed(t, d, false)
	h.Advance(d.RetryAfter + 20*time.Millisecond)
	d, _ = acquire(t, h.Store, "a", "", c)
	wantAllowed(t, d, true)
}

func testConcurrency(t *testing.T, h Harness) {
	c := limit.Check{Concurrency: 2, LeaseTTL: time.Minute}
	_, l1 := acquire(t, h.Store, "a", "", c)
	d, _ := acquire(t, h.Store, "a", "", c)
	wantAllowed(t, d, true)
	d, _ = acquire(t, h.Store, "a", "", c)
	wantAllowed(t, d, false)
	if d.Reason != limit.ReasonConcurrency || d.RetryAfter != limit.BusyRetry || d.Limit != 2 {
		t.Fatalf("third call: %+v, want concurrency, retry %v, limit 2", d, limit.BusyRetry)
	}
	if err := h.Store.Release(context.Background(), l1); err != nil {
		t.Fatalf("Release: %v", err)
	}
	d, _ = acquire(t, h.Store, "a", "", c)
	wantAllowed(t, d, true)
}

func testToolCap(t *testing.T, h Harness) {
	c := limit.Check{ToolCap: 3, LeaseTTL: time.Minute}
	for _, caller := range []string{"a", "b", "c"} {
		d, _ := acquire(t, h.Store, caller, "work", c)
		wantAllowed(t, d, true)
	}
	d, _ := acquire(t, h.Store, "d", "work", c)
	if d.Allowed || d.Reason != limit.ReasonTool || d.Limit != 3 {
		t.Fatalf("fourth caller: %+v, want refused by the tool cap of 3", d)
	}
	d, _ = acquire(t, h.Store, "d", "other", c)
	wantAllowed(t, d, true)
}

func testAllOrNothing(t *testing.T, h Harness) {
	c := limit.Check{Rate: 0.01, Burst: 2, Concurrency: 1, LeaseTTL: time.Minute}
	_, l := acquire(t, h.Store, "a", "", c) // 1 token left
	d, _ := acquire(t, h.Store, "a", "", c)
	if d.Allowed || d.Reason != limit.ReasonConcurrency {
		t.Fatalf("second: %+v, want refused by concurrency", d)
	}
	if err := h.Store.Release(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	d, _ = acquire(t, h.Store, "a", "", c) // the refusal left the token
	wantAllowed(t, d, true)
	if d.Remaining != 0 {
		t.Fatalf("remaining %d, want 0", d.Remaining)
	}
}

func testLeaseLapse(t *testing.T, h Harness) {
	c := limit.Check{Concurrency: 1, LeaseTTL: 300 * time.Millisecond}
	acquire(t, h.Store, "a", "", c)
	d, _ := acquire(t, h.Store, "a", "", c)
	wantAllowed(t, d, false)
	if d.RetryAfter <= 0 || d.RetryAfter > limit.BusyRetry {
		t.Fatalf("retry %v, want (0, %v]", d.RetryAfter, limit.BusyRetry)
	}
	h.Advance(400 * time.Millisecond)
	d, _ = acquire(t, h.Store, "a", "", c)
	wantAllowed(t, d, true)
}

func testRenewHolds(t *testing.T, h Harness) {
	c := limit.Check{Concurrency: 1, ToolCap: 1, LeaseTTL: 400 * time.Millisecond}
	_, l := acquire(t, h.Store, "a", "work", c)
	for range 3 {
		h.Advance(200 * time.Millisecond)
		if err := h.Store.Renew(context.Background(), []limit.Lease{l}, c); err != nil {
			t.Fatalf("Renew: %v", err)
		}
	}
	d, _ := acquire(t, h.Store, "a", "x", c)
	if d.Allowed || d.Reason != limit.ReasonConcurrency {
		t.Fatalf("caller after renewals: %+v, want refused by concurrency", d)
	}
	d, _ = acquire(t, h.Store, "b", "work", c)
	if d.Allowed || d.Reason != limit.ReasonTool {
		t.Fatalf("tool after renewals: %+v, want refused by the tool cap", d)
	}
}

func testRenewAfterRelease(t *testing.T, h Harness) {
	c := limit.Check{Concurrency: 1, LeaseTTL: time.Minute}
	_, l := acquire(t, h.Store, "a", "", c)
	ctx := context.Background()
	if err := h.Store.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	if err := h.Store.Release(ctx, l); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	if err := h.Store.Renew(ctx, []limit.Lease{l}, c); err != nil {
		t.Fatal(err)
	}
	d, _ := acquire(t, h.Store, "a", "", c)
	wantAllowed(t, d, true)
}

func testCallersApart(t *testing.T, h Harness) {
	c := limit.Check{Rate: 1, Burst: 1, Concurrency: 1, LeaseTTL: time.Minute}
	d, _ := acquire(t, h.Store, "a", "", c)
	wantAllowed(t, d, true)
	d, _ = acquire(t, h.Store, "b", "", c)
	wantAllowed(t, d, true)
	d, _ = acquire(t, h.Store, "a", "", c)
	wantAllowed(t, d, false)
}

func testConcurrentAcquires(t *testing.T, h Harness) {
	c := limit.Check{Rate: 1000, Burst: 7, Concurrency: 3, LeaseTTL: time.Minute}
	var mu sync.Mutex
	allowed := 0
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			d, _, err := h.Store.Acquire(context.Background(), "a", "", c)
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

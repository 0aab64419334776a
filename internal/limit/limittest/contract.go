// Package limittest is the contract every limit.Store meets, for the tests of
// each store: the same cases, and the same decisions from each.
package limittest

import (
	"context"
	"fmt"
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
		{"a place without a caller holds, renews and frees", testPlace},
		{"a refusal consumes nothing", testAllOrNothing},
		{"an unrenewed lease lapses", testLeaseLapse},
		{"a renewed lease holds", testRenewHolds},
		{"a renewal after release takes nothing", testRenewAfterRelease},
		{"callers are apart", testCallersApart},
		{"concurrent acquires never exceed the limit", testConcurrentAcquires},
		{"a batch takes a token for each call, all or none", testBatchTokens},
		{"a batch takes a slot and a tool place for each call, all or none", testBatchLeases},
		{"concurrent batches never exceed the limit", testConcurrentBatches},
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

// slow fails t as format says, unless more than margin of real time has
// passed since start: a store on the real clock (the server's) has then
// moved on past what the case can judge, and t is skipped saying so. On a
// fake clock no real time counts.
func slow(t *testing.T, start time.Time, margin time.Duration, format string, args ...any) {
	t.Helper()
	if took := time.Since(start); took >= margin {
		t.Skipf("%s; but the steps took %v of real time, over the %v the case can judge on a store on the real clock", fmt.Sprintf(format, args...), took, margin)
	}
	t.Fatalf(format, args...)
}

// The rates and lease lifetimes below leave a second or so between the
// steps that must come before a token or a lease is due, for a store on
// the real clock on a loaded machine; a fake clock makes nothing wait.

func testBurst(t *testing.T, h Harness) {
	c := limit.Check{Rate: 0.5, Burst: 5} // a token each 2 s
	margin := 1500 * time.Millisecond
	start := time.Now()
	for i := range 5 {
		d, _ := acquire(t, h.Store, "a", "", c)
		if !d.Allowed {
			slow(t, start, margin, "call %d: %+v, want allowed", i, d)
		}
		if d.Limit != 5 || d.Remaining != 4-i {
			slow(t, start, margin, "call %d: limit %d remaining %d, want 5 and %d", i, d.Limit, d.Remaining, 4-i)
		}
	}
	d, _ := acquire(t, h.Store, "a", "", c)
	if d.Allowed || d.Reason != limit.ReasonRate || d.RetryAfter <= 0 || d.RetryAfter > 2*time.Second || d.Limit != 5 || d.Remaining != 0 {
		slow(t, start, margin, "sixth call: %+v, want rate, 0 < retry <= 2s, limit 5, remaining 0", d)
	}
}

func testRefill(t *testing.T, h Harness) {
	c := limit.Check{Rate: 1, Burst: 1}
	start := time.Now()
	d, _ := acquire(t, h.Store, "a", "", c)
	wantAllowed(t, d, true)
	d, _ = acquire(t, h.Store, "a", "", c)
	if d.Allowed {
		slow(t, start, 750*time.Millisecond, "second call: %+v, want refused", d)
	}
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

// testPlace is a replica's capacity as the gateway holds it
// (Limiter.Reserve): a cap and nothing else, under no caller.
func testPlace(t *testing.T, h Harness) {
	ctx := context.Background()
	c := limit.Check{ToolCap: 2, LeaseTTL: time.Minute}
	_, first := acquire(t, h.Store, "", "replica-a", c)
	_, second := acquire(t, h.Store, "", "replica-a", c)
	d, _ := acquire(t, h.Store, "", "replica-a", c)
	if d.Allowed || d.Reason != limit.ReasonTool || d.Limit != 2 || d.RetryAfter <= 0 || d.RetryAfter > limit.BusyRetry {
		t.Fatalf("third place: %+v, want refused by the cap of 2 with a retry in (0, %v]", d, limit.BusyRetry)
	}
	d, _ = acquire(t, h.Store, "", "replica-b", c)
	wantAllowed(t, d, true)
	if err := h.Store.Renew(ctx, []limit.Lease{first, second}, c); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	if err := h.Store.Release(ctx, first); err != nil {
		t.Fatalf("Release: %v", err)
	}
	d, _ = acquire(t, h.Store, "", "replica-a", c)
	wantAllowed(t, d, true)
	d, _ = acquire(t, h.Store, "", "replica-a", c)
	wantAllowed(t, d, false)
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
	c := limit.Check{Concurrency: 1, LeaseTTL: time.Second}
	start := time.Now()
	acquire(t, h.Store, "a", "", c)
	d, _ := acquire(t, h.Store, "a", "", c)
	if d.Allowed {
		slow(t, start, 750*time.Millisecond, "second call: %+v, want refused by the lease", d)
	}
	if d.RetryAfter <= 0 || d.RetryAfter > limit.BusyRetry {
		t.Fatalf("retry %v, want (0, %v]", d.RetryAfter, limit.BusyRetry)
	}
	h.Advance(1200 * time.Millisecond)
	d, _ = acquire(t, h.Store, "a", "", c)
	wantAllowed(t, d, true)
}

func testRenewHolds(t *testing.T, h Harness) {
	// Four renewals half a second apart: the lease outlives its lifetime
	// only by them.
	c := limit.Check{Concurrency: 1, ToolCap: 1, LeaseTTL: 1500 * time.Millisecond}
	margin := c.LeaseTTL * 3 / 4
	var gap time.Duration // the longest real time between two extensions
	last := time.Now()
	_, l := acquire(t, h.Store, "a", "work", c)
	for range 4 {
		h.Advance(500 * time.Millisecond)
		renewing := time.Now()
		if err := h.Store.Renew(context.Background(), []limit.Lease{l}, c); err != nil {
			t.Fatalf("Renew: %v", err)
		}
		gap, last = max(gap, time.Since(last)), renewing
	}
	d, _ := acquire(t, h.Store, "a", "x", c)
	gap = max(gap, time.Since(last))
	if d.Allowed || d.Reason != limit.ReasonConcurrency {
		slow(t, time.Now().Add(-gap), margin, "caller after renewals: %+v, want refused by concurrency", d)
	}
	d, _ = acquire(t, h.Store, "b", "work", c)
	gap = max(gap, time.Since(last))
	if d.Allowed || d.Reason != limit.ReasonTool {
		slow(t, time.Now().Add(-gap), margin, "tool after renewals: %+v, want refused by the tool cap", d)
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

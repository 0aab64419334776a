package limittest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/limit"
)

// acquireBatch decides calls of caller at once and checks that an allowed
// batch has one lease per call, and a refused one none.
func acquireBatch(t *testing.T, s limit.Store, caller string, calls []limit.Call, c limit.Check) (limit.Decision, []limit.Lease) {
	t.Helper()
	d, ls, err := s.AcquireBatch(context.Background(), caller, calls, c)
	if err != nil {
		t.Fatalf("AcquireBatch: %v", err)
	}
	if d.Allowed && len(ls) != len(calls) || !d.Allowed && len(ls) != 0 {
		t.Fatalf("AcquireBatch: allowed %v with %d leases for %d calls", d.Allowed, len(ls), len(calls))
	}
	return d, ls
}

// calls returns n calls of tool under cap.
func calls(n int, tool string, cap int) []limit.Call {
	out := make([]limit.Call, n)
	for i := range out {
		out[i] = limit.Call{Tool: tool, Cap: cap}
	}
	return out
}

func testBatchTokens(t *testing.T, h Harness) {
	c := limit.Check{Rate: 0.01, Burst: 3} // no refill within the case
	d, _ := acquireBatch(t, h.Store, "a", calls(2, "", 0), c)
	wantAllowed(t, d, true)
	if d.Remaining != 1 {
		t.Fatalf("after a batch of 2 from 3: remaining %d, want 1", d.Remaining)
	}
	d, _ = acquireBatch(t, h.Store, "a", calls(2, "", 0), c)
	if d.Allowed || d.Reason != limit.ReasonRate || d.Limit != 3 {
		t.Fatalf("a batch of 2 with 1 token: %+v, want refused by the rate", d)
	}
	// The refusal took nothing: the last token is still there, once.
	d, _ = acquire(t, h.Store, "a", "", c)
	wantAllowed(t, d, true)
	d, _ = acquire(t, h.Store, "a", "", c)
	wantAllowed(t, d, false)
	// More calls than the burst never fit.
	d, _ = acquireBatch(t, h.Store, "b", calls(4, "", 0), c)
	wantAllowed(t, d, false)
}

func testBatchLeases(t *testing.T, h Harness) {
	ctx := context.Background()
	c := limit.Check{Concurrency: 3, LeaseTTL: time.Minute}
	// Three calls of a tool capped at 2: refused whole, by the tool.
	d, _ := acquireBatch(t, h.Store, "a", calls(3, "work", 2), c)
	if d.Allowed || d.Reason != limit.ReasonTool || d.Limit != 2 {
		t.Fatalf("3 calls under a cap of 2: %+v, want refused by the tool cap", d)
	}
	// Two of the tool and one uncapped call: allowed, three leases.
	batch := append(calls(2, "work", 2), limit.Call{Tool: "other"})
	d, ls := acquireBatch(t, h.Store, "a", batch, c)
	wantAllowed(t, d, true)
	for i, l := range ls {
		if !l.Held() {
			t.Fatalf("lease %d of an allowed batch holds nothing", i)
		}
	}
	// The caller's three slots and the tool's two places are taken.
	d, _ = acquire(t, h.Store, "a", "", c)
	if d.Allowed || d.Reason != limit.ReasonConcurrency {
		t.Fatalf("a fourth call of the caller: %+v, want refused by concurrency", d)
	}
	d, _ = acquire(t, h.Store, "b", "work", limit.Check{ToolCap: 2, LeaseTTL: time.Minute})
	if d.Allowed || d.Reason != limit.ReasonTool {
		t.Fatalf("another caller's call of the tool: %+v, want refused by the cap", d)
	}
	if err := h.Store.Release(ctx, ls[0]); err != nil {
		t.Fatal(err)
	}
	d, _ = acquire(t, h.Store, "b", "work", limit.Check{ToolCap: 2, LeaseTTL: time.Minute})
	wantAllowed(t, d, true)
	// Two calls with one slot free: refused whole; one: allowed.
	d, _ = acquireBatch(t, h.Store, "a", calls(2, "", 0), c)
	if d.Allowed || d.Reason != limit.ReasonConcurrency {
		t.Fatalf("2 calls with 1 slot free: %+v, want refused by concurrency", d)
	}
	d, _ = acquireBatch(t, h.Store, "a", calls(1, "", 0), c)
	wantAllowed(t, d, true)
	// A batch the caller's limits refuse gives back the tool places it
	// could have had: another caller then has the whole cap.
	d, _ = acquireBatch(t, h.Store, "a", calls(2, "spare", 2), c)
	wantAllowed(t, d, false)
	d, _ = acquireBatch(t, h.Store, "c", calls(2, "spare", 2), c)
	wantAllowed(t, d, true)
}

func testConcurrentBatches(t *testing.T, h Harness) {
	c := limit.Check{Rate: 1000, Burst: 100, Concurrency: 5, LeaseTTL: time.Minute}
	var mu sync.Mutex
	allowed := 0
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			d, _, err := h.Store.AcquireBatch(context.Background(), "a", calls(2, "work", 3), c)
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
	// Five slots hold two batches of two; the cap of 3 holds one.
	if allowed != 1 {
		t.Fatalf("%d of 10 concurrent batches of 2 calls under a cap of 3 allowed, want exactly 1", allowed)
	}
}

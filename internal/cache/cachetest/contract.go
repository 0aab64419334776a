// Package cachetest is the contract every cache.Store meets, for the tests
// of each store.
package cachetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/cache"
)

// Harness is one store under test and the means to move its clock.
type Harness struct {
	Store cache.Store
	// Advance moves the store's clock (a fake clock, or a real sleep).
	Advance func(time.Duration)
	// MaxEntry is the store's largest value.
	MaxEntry int
}

// Run runs every case on a fresh store from newHarness.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	tests := []struct {
		name string
		run  func(t *testing.T, h Harness)
	}{
		{"set then get", testSetGet},
		{"keys in order", testOrder},
		{"entries expire", testExpire},
		{"invalidate drops the generation's entries only", testInvalidate},
		{"an answer seen before an invalidation is not kept", testStaleSet},
		{"oversized values are not kept", testOversized},
		{"concurrent use", testConcurrent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, newHarness(t)) })
	}
}

var ctx = context.Background()

func get(t *testing.T, s cache.Store, gen string, keys ...string) cache.Hit {
	t.Helper()
	h, err := s.Get(ctx, gen, keys...)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	return h
}

func set(t *testing.T, s cache.Store, gen string, seen uint64, key, value string, ttl time.Duration) {
	t.Helper()
	if err := s.Set(ctx, gen, seen, key, []byte(value), ttl); err != nil {
		t.Fatalf("Set: %v", err)
	}
}

func testSetGet(t *testing.T, h Harness) {
	miss := get(t, h.Store, "g", "k")
	if miss.Found {
		t.Fatal("hit in an empty store")
	}
	set(t, h.Store, "g", miss.Gen, "k", `{"tools":[]}`, time.Minute)
	hit := get(t, h.Store, "g", "k")
	if !hit.Found || string(hit.Value) != `{"tools":[]}` || hit.Index != 0 {
		t.Fatalf("hit = %+v", hit)
	}
	if hit.Remaining <= 50*time.Second || hit.Remaining > time.Minute {
		t.Fatalf("remaining %v, want just under a minute", hit.Remaining)
	}
}

func testOrder(t *testing.T, h Harness) {
	g := get(t, h.Store, "g", "a").Gen
	set(t, h.Store, "g", g, "b", "B", time.Minute)
	hit := get(t, h.Store, "g", "a", "b")
	if !hit.Found || hit.Index != 1 || string(hit.Value) != "B" {
		t.Fatalf("second key: %+v", hit)
	}
	set(t, h.Store, "g", g, "a", "A", time.Minute)
	if hit := get(t, h.Store, "g", "a", "b"); hit.Index != 0 || string(hit.Value) != "A" {
		t.Fatalf("first key first: %+v", hit)
	}
}

func testExpire(t *testing.T, h Harness) {
	g := get(t, h.Store, "g", "k").Gen
	set(t, h.Store, "g", g, "k", "v", 200*time.Millisecond)
	h.Advance(350 * time.Millisecond)
	if get(t, h.Store, "g", "k").Found {
		t.Fatal("an expired entry was found")
	}
}

func testInvalidate(t *testing.T, h Harness) {
	set(t, h.Store, "tools", get(t, h.Store, "tools").Gen, "k1", "v1", time.Minute)
	set(t, h.Store, "prompts", get(t, h.Store, "prompts").Gen, "k2", "v2", time.Minute)
	if err := h.Store.Invalidate(ctx, "tools"); err != nil {
		t.Fatal(err)
	}
	if get(t, h.Store, "tools", "k1").Found {
		t.Fatal("an invalidated entry was found")
	}
	if !get(t, h.Store, "prompts", "k2").Found {
		t.Fatal("another generation's entry went too")
	}
	g := get(t, h.Store, "tools", "k1").Gen
	set(t, h.Store, "tools", g, "k1", "v3", time.Minute)
	if hit := get(t, h.Store, "tools", "k1"); !hit.Found || string(hit.Value) != "v3" {
		t.Fatalf("kept after the invalidation: %+v", hit)
	}
}

func testStaleSet(t *testing.T, h Harness) {
	seen := get(t, h.Store, "g", "k").Gen // the lookup, before forwarding
	if err := h.Store.Invalidate(ctx, "g"); err != nil {
		t.Fatal(err)
	} // the list changed while the replica answered
	set(t, h.Store, "g", seen, "k", "stale", time.Minute)
	if get(t, h.Store, "g", "k").Found {
		t.Fatal("an answer fetched before an invalidation was kept after it")
	}
}

func testOversized(t *testing.T, h Harness) {
	g := get(t, h.Store, "g", "k").Gen
	set(t, h.Store, "g", g, "k", string(make([]byte, h.MaxEntry+1)), time.Minute)
	if get(t, h.Store, "g", "k").Found {
		t.Fatal("an oversized value was kept")
	}
}

func testConcurrent(t *testing.T, h Harness) {
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 20 {
				key := string(rune('a' + (i+j)%5))
				g, err := h.Store.Get(ctx, "g", key)
				if err != nil {
					t.Error(err)
					return
				}
				if err := h.Store.Set(ctx, "g", g.Gen, key, []byte(key), time.Minute); err != nil {
					t.Error(err)
					return
				}
				if j%7 == 0 {
					_ = h.Store.Invalidate(ctx, "g")
				}
			}
		})
	}
	wg.Wait()
}

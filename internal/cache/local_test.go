package cache_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/cache"
	"github.com/mcpfleet/mcpfleet/internal/cache/cachetest"
)

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

func TestLocalContract(t *testing.T) {
	cachetest.Run(t, func(t *testing.T) cachetest.Harness {
		c := &clock{now: time.Unix(1_700_000_000, 0)}
		return cachetest.Harness{Store: cache.NewLocalAt(1<<20, 4096, c.Now), Advance: c.Advance, MaxEntry: 4096}
	})
}

func TestLocalBoundedByBytes(t *testing.T) {
	s := cache.NewLocal(1000, 400)
	ctx := context.Background()
	for _, k := range []string{"a", "b", "c"} {
		if err := s.Set(ctx, "g", 0, k, make([]byte, 400), time.Minute); err != nil {
			t.Fatal(err)
		}
		if k == "b" {
			s.Get(ctx, "g", "a") // a is used after b: b goes first
		}
	}
	if s.Bytes() > 1000 {
		t.Fatalf("holds %d bytes, bound 1000", s.Bytes())
	}
	for k, want := range map[string]bool{"a": true, "b": false, "c": true} {
		if h, _ := s.Get(ctx, "g", k); h.Found != want {
			t.Errorf("%s found = %v, want %v (least recently used goes first)", k, h.Found, want)
		}
	}
}

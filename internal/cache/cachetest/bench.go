package cachetest

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/cache"
)

// BenchMiss measures a cache miss as the gateway pays it: a lookup of a key
// never kept, then the answer kept under it (a tools/call result of 75
// bytes, as bench/features.sh's canned replica gives). Each iteration is a
// new key, so the store grows by b.N entries.
func BenchMiss(b *testing.B, s cache.Store) {
	ctx := context.Background()
	value := []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}]}}`)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		key := "bench:call:" + strconv.Itoa(i)
		h, err := s.Get(ctx, "bench", key)
		if err != nil {
			b.Fatal(err)
		}
		if h.Found {
			b.Fatal("a key never kept was found")
		}
		if err := s.Set(ctx, "bench", h.Gen, key, value, time.Minute); err != nil {
			b.Fatal(err)
		}
	}
}

package rediscache

import (
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/cache/cachetest"
	"github.com/mcpfleet/mcpfleet/internal/store/redistest"
)

// BenchmarkRedisMiss: a miss and the answer kept, in a redis-server on
// loopback (two script runs, two round trips).
func BenchmarkRedisMiss(b *testing.B) {
	cachetest.BenchMiss(b, newStore(b, redistest.Start(b), "bench:"))
}

package cache_test

import (
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/cache"
	"github.com/mcpfleet/mcpfleet/internal/cache/cachetest"
)

// BenchmarkLocalMiss: a miss and the answer kept, in the local store.
func BenchmarkLocalMiss(b *testing.B) {
	cachetest.BenchMiss(b, cache.NewLocal(0, 0))
}

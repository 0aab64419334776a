package redisstore

import (
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/limit"
	"github.com/mcpfleet/mcpfleet/internal/limit/limittest"
	"github.com/mcpfleet/mcpfleet/internal/store/redistest"
)

// BenchmarkAdmitRedis is limit.BenchmarkAdmitMemory against a local
// redis-server: one script round trip to admit, one pipeline to release.
func BenchmarkAdmitRedis(b *testing.B) {
	s := newRedisStore(b, redistest.Start(b), "bench:")
	l := limit.NewLimiter(s, &limit.Options{Rate: 1e6, Burst: 1e6, Concurrency: 100, Tools: map[string]int{"work": 1e6}})
	defer l.Close()
	limittest.BenchAdmit(b, l)
}

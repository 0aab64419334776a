package limit_test

import (
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/limit"
	"github.com/mcpfleet/mcpfleet/internal/limit/limittest"
)

// BenchmarkAdmitMemory measures one admission and its release in the memory
// store: rate, concurrency and a tool cap, over 1,000 callers.
func BenchmarkAdmitMemory(b *testing.B) {
	l := limit.NewLimiter(limit.NewMemory(0), &limit.Options{Rate: 1e6, Burst: 1e6, Concurrency: 100, Tools: map[string]int{"work": 1e6}})
	defer l.Close()
	limittest.BenchAdmit(b, l)
}

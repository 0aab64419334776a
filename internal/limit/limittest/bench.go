package limittest

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/limit"
)

// BenchAdmit admits and releases calls of 1,000 callers in turn, one at a
// time, and reports the p50 and p99 of an admission.
func BenchAdmit(b *testing.B, l *limit.Limiter) {
	callers := make([]string, 1000)
	for i := range callers {
		callers[i] = strconv.FormatUint(uint64(i)*0x9e3779b97f4a7c15, 16)
	}
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		a := l.Admit(ctx, callers[i%len(callers)], "tools/call", "work")
		lat = append(lat, time.Since(start))
		if !a.Allowed || a.StoreErr != nil {
			b.Fatalf("admission refused: %+v", a)
		}
		a.Done()
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

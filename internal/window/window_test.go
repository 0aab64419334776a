package window

import (
	"hash/maphash"
	"math"
	"strconv"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func TestLatencyQuantiles(t *testing.T) {
	var l Latency
	// 1..1000 ms, one each: p50 is 500 ms, p99 990 ms.
	for i := 1; i <= 1000; i++ {
		l.Observe(t0, time.Duration(i)*time.Millisecond)
	}
	qs, n := l.Quantiles(t0, 0.5, 0.99)
	if n != 1000 {
		t.Fatalf("covered %d durations, want 1000", n)
	}
	for i, want := range []time.Duration{500 * time.Millisecond, 990 * time.Millisecond} {
		if ratio := float64(qs[i]) / float64(want); ratio < 0.9 || ratio > 1.1 {
			t.Errorf("quantile %d: %v, want within 10%% of %v", i, qs[i], want)
		}
	}
}

func TestLatencyForgetsTheOldWindow(t *testing.T) {
	var l Latency
	l.Observe(t0, time.Second)
	if _, n := l.Quantiles(t0.Add(LatencySlot*(LatencySlots-1)), 0.5); n != 1 {
		t.Fatalf("%d durations %v later, want the one still in the window", n, LatencySlot*(LatencySlots-1))
	}
	later := t0.Add(LatencySlot * LatencySlots)
	if qs, n := l.Quantiles(later, 0.5); n != 0 || qs[0] != 0 {
		t.Fatalf("a minute on: %d durations, p50 %v; want none", n, qs[0])
	}
	// A slot reused a window later starts from zero.
	l.Observe(later, time.Millisecond)
	if qs, n := l.Quantiles(later, 0.5); n != 1 || qs[0] > 2*time.Millisecond {
		t.Fatalf("after reuse: %d durations, p50 %v; want 1 of about 1 ms", n, qs[0])
	}
}

func TestLatencyExtremes(t *testing.T) {
	var l Latency
	l.Observe(t0, 0)
	l.Observe(t0, 100*time.Hour)
	qs, _ := l.Quantiles(t0, 0, 1)
	if qs[0] != latencyBase || qs[1] < 30*time.Minute {
		t.Fatalf("extremes %v: want %v and the last bucket", qs, latencyBase)
	}
}

// TestBucketOfIsTheLogarithm: the bucket found from the float's exponent
// is the one the logarithm gives.
func TestBucketOfIsTheLogarithm(t *testing.T) {
	for d := latencyBase + 1; d < time.Hour; d = d*1013/1000 + 1 {
		want := min(1+int(math.Floor(4*math.Log2(float64(d)/float64(latencyBase)))), latencyBuckets-1)
		if got := bucketOf(d); got != want && !nearBound(d) {
			t.Fatalf("bucketOf(%v) = %d, want %d", d, got, want)
		}
	}
}

// nearBound says d is within float rounding of a bucket's bound, where
// the two ways may round apart.
func nearBound(d time.Duration) bool {
	x := 4 * math.Log2(float64(d)/float64(latencyBase))
	return math.Abs(x-math.Round(x)) < 1e-9
}

func hashes(n int) []uint64 {
	seed := maphash.MakeSeed()
	out := make([]uint64, n)
	for i := range out {
		out[i] = maphash.String(seed, "session-"+strconv.Itoa(i))
	}
	return out
}

// fixedHashes are n well-mixed hashes that are the same in every run
// (splitmix64 of 1..n): which registers random ones fall in varies, and
// two of ten in one register (a few runs in a thousand) count once.
func fixedHashes(n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		z := uint64(i+1) * 0x9e3779b97f4a7c15
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		out[i] = z ^ (z >> 31)
	}
	return out
}

// TestDistinctSmallCountsAreExact: keys that fall in distinct registers
// are counted exactly.
func TestDistinctSmallCountsAreExact(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 10} {
		var d Distinct
		for _, h := range fixedHashes(n) {
			d.Add(t0, h)
			d.Add(t0, h) // a key seen twice counts once
		}
		if got := d.Estimate(t0); got != n {
			t.Errorf("%d keys: estimate %d", n, got)
		}
	}
}

func TestDistinctLargeCountsWithinError(t *testing.T) {
	for _, n := range []int{500, 5000, 100000} {
		var d Distinct
		for _, h := range hashes(n) {
			d.Add(t0, h)
		}
		got := d.Estimate(t0)
		// Four standard errors (6.5% each) of the estimator.
		if math.Abs(float64(got-n))/float64(n) > 0.26 {
			t.Errorf("%d keys: estimate %d, off by more than 26%%", n, got)
		}
	}
}

func TestDistinctWindow(t *testing.T) {
	var d Distinct
	hs := fixedHashes(3) // in three registers: random ones may share one
	d.Add(t0, hs[0])
	d.Add(t0.Add(DistinctSlot), hs[1])
	if got := d.Estimate(t0.Add(DistinctSlot)); got != 2 {
		t.Fatalf("one slot on: %d, want both keys", got)
	}
	d.Add(t0.Add(2*DistinctSlot), hs[2])
	if got := d.Estimate(t0.Add(2 * DistinctSlot)); got != 2 {
		t.Fatalf("two slots on: %d, want the last two keys", got)
	}
	if got := d.Estimate(t0.Add(10 * DistinctSlot)); got != 0 {
		t.Fatalf("long after: %d, want 0", got)
	}
}

func TestConcurrentUse(t *testing.T) {
	var l Latency
	var d Distinct
	hs := hashes(64)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 1000 {
				now := t0.Add(time.Duration(i) * 100 * time.Millisecond)
				l.Observe(now, time.Duration(g+1)*time.Millisecond)
				d.Add(now, hs[i%len(hs)])
				l.Quantiles(now, 0.5)
				d.Estimate(now)
			}
		})
	}
	wg.Wait()
}

func BenchmarkLatencyObserve(b *testing.B) {
	var l Latency
	now := time.Now()
	for i := 0; b.Loop(); i++ {
		l.Observe(now, time.Duration(i%5000)*time.Microsecond)
	}
}

func BenchmarkDistinctAdd(b *testing.B) {
	var d Distinct
	hs := hashes(1024)
	now := time.Now()
	for i := 0; b.Loop(); i++ {
		d.Add(now, hs[i%len(hs)])
	}
}

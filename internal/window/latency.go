// Package window keeps figures of the recent past in fixed memory, for the
// fleet view: a latency histogram over the last minute (Latency) and an
// estimate of how many distinct keys were seen in the last minutes
// (Distinct). Both are safe for concurrent use without locks, and take the
// time as an argument, so tests and the simulator drive them on any clock.
package window

import (
	"math"
	"sync/atomic"
	"time"
)

// The latency histogram's shape: buckets grow by a factor of 2^(1/4)
// (19%) from 100 µs, so 100 buckets reach about 33 minutes; a quantile is
// the geometric middle of its bucket, within 10% of the true value.
const (
	latencyBuckets = 100
	latencyBase    = 100 * time.Microsecond
	latencyGrowth  = 1.189207115002721 // 2^(1/4)
)

// LatencySlots and LatencySlot are the latency window: LatencySlots slots of
// LatencySlot each, the current one filling, so a quantile covers between
// (LatencySlots-1) and LatencySlots slots of the past.
const (
	LatencySlots = 6
	LatencySlot  = 10 * time.Second
)

// Latency is a histogram of durations over the last minute. The zero value
// is ready to use.
type Latency struct {
	slots [LatencySlots]latencySlot
}

type latencySlot struct {
	epoch   atomic.Int64 // the slot's LatencySlot number since the Unix epoch
	buckets [latencyBuckets]atomic.Uint32
}

// Observe counts one duration d that ended at now.
func (l *Latency) Observe(now time.Time, d time.Duration) {
	e := now.UnixNano() / int64(LatencySlot)
	s := &l.slots[e%LatencySlots]
	if old := s.epoch.Load(); old != e && s.epoch.CompareAndSwap(old, e) {
		// The slot held an older window: it starts again. A duration
		// counted by another goroutine between the swap and the reset may
		// be lost: the figures are estimates.
		for i := range s.buckets {
			s.buckets[i].Store(0)
		}
	}
	s.buckets[bucketOf(d)].Add(1)
}

// quarterSteps are 2^(1/4), 2^(2/4) and 2^(3/4): the bounds between a
// power of two's four buckets.
var quarterSteps = [3]float64{1.189207115002721, 1.4142135623730951, 1.681792830507429}

// bucketOf is the bucket of d: 0 up to latencyBase, then one per factor of
// latencyGrowth, the last taking everything longer. It is 1 +
// floor(4*log2(d/latencyBase)), found from the float's exponent and three
// comparisons rather than a logarithm (a fifth of the time).
func bucketOf(d time.Duration) int {
	if d <= latencyBase {
		return 0
	}
	frac, exp := math.Frexp(float64(d) / float64(latencyBase)) // frac in [0.5, 1)
	m, b := frac*2, 1+4*(exp-1)
	for _, step := range quarterSteps {
		if m >= step {
			b++
		}
	}
	return min(b, latencyBuckets-1)
}

// middle is a bucket's representative duration: the geometric middle of
// its bounds (latencyBase for bucket 0).
func middle(b int) time.Duration {
	if b == 0 {
		return latencyBase
	}
	lo := float64(latencyBase) * math.Pow(latencyGrowth, float64(b-1))
	return time.Duration(lo * math.Sqrt(latencyGrowth))
}

// Quantiles returns the durations at each of qs (0.5 is the median) over
// the slots of the last minute at now, and how many durations they cover.
// With none it returns zeros.
func (l *Latency) Quantiles(now time.Time, qs ...float64) ([]time.Duration, uint64) {
	var sum [latencyBuckets]uint64
	var n uint64
	e := now.UnixNano() / int64(LatencySlot)
	for i := range l.slots {
		s := &l.slots[i]
		if se := s.epoch.Load(); se > e || se <= e-LatencySlots {
			continue
		}
		for b := range s.buckets {
			c := uint64(s.buckets[b].Load())
			sum[b] += c
			n += c
		}
	}
	out := make([]time.Duration, len(qs))
	if n == 0 {
		return out, 0
	}
	for i, q := range qs {
		rank := uint64(math.Ceil(q * float64(n)))
		rank = min(max(rank, 1), n)
		var seen uint64
		for b, c := range sum {
			if seen += c; seen >= rank {
				out[i] = middle(b)
				break
			}
		}
	}
	return out, n
}

package window

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// DistinctSlots and DistinctSlot are the distinct-count window: an estimate
// covers the current slot and the one before, so keys seen in the last
// DistinctSlot to 2*DistinctSlot.
const (
	DistinctSlots = 2
	DistinctSlot  = 5 * time.Minute
)

// distinctRegisters is the HyperLogLog's register count (Flajolet, Fusy,
// Gandouet and Meunier, "HyperLogLog: the analysis of a near-optimal
// cardinality estimation algorithm", 2007): a standard error of
// 1.04/sqrt(256), 6.5%, and exact in practice below a few dozen keys,
// where the estimate is linear counting.
const (
	distinctBits      = 8
	distinctRegisters = 1 << distinctBits
)

// Distinct estimates how many distinct keys were added recently, in fixed
// memory and without keeping any key: a key is a 64-bit hash the caller
// computes (a salted or seeded one, so that nothing of the key can be read
// back from the registers). The zero value is ready to use.
type Distinct struct {
	slots [DistinctSlots]distinctSlot
}

type distinctSlot struct {
	epoch atomic.Int64
	regs  [distinctRegisters]atomic.Uint32
}

// Add counts the key whose hash is h, seen at now.
func (d *Distinct) Add(now time.Time, h uint64) {
	e := now.UnixNano() / int64(DistinctSlot)
	s := &d.slots[e%DistinctSlots]
	if old := s.epoch.Load(); old != e && s.epoch.CompareAndSwap(old, e) {
		for i := range s.regs {
			s.regs[i].Store(0)
		}
	}
	idx := h >> (64 - distinctBits)
	rho := uint32(bits.LeadingZeros64(h<<distinctBits|1<<(distinctBits-1)) + 1)
	r := &s.regs[idx]
	for {
		cur := r.Load()
		if cur >= rho || r.CompareAndSwap(cur, rho) {
			return
		}
	}
}

// Estimate returns how many distinct keys were added in the current slot
// and the one before it, at now.
func (d *Distinct) Estimate(now time.Time) int {
	var regs [distinctRegisters]uint32
	e := now.UnixNano() / int64(DistinctSlot)
	for i := range d.slots {
		s := &d.slots[i]
		if se := s.epoch.Load(); se > e || se <= e-DistinctSlots {
			continue
		}
		for j := range regs {
			regs[j] = max(regs[j], s.regs[j].Load())
		}
	}
	return estimate(regs[:])
}

// estimate is HyperLogLog's estimate from its registers, with linear
// counting in the small range (at most 2.5 m).
func estimate(regs []uint32) int {
	m := float64(len(regs))
	var sum float64
	zeros := 0
	for _, r := range regs {
		sum += math.Ldexp(1, -int(r))
		if r == 0 {
			zeros++
		}
	}
	alpha := 0.7213 / (1 + 1.079/m)
	e := alpha * m * m / sum
	if e <= 2.5*m && zeros > 0 {
		e = m * math.Log(m/float64(zeros))
	}
	return int(math.Round(e))
}

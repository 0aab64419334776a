package ring

import (
	"math"
	"math/big"
	"sort"
	"testing"
)

// FuzzPick checks Pick against a naive reference on arbitrary fleets: it
// never panics and returns -1 only when no member is eligible and not
// skipped, else such a member, the first clockwise within the bound if any.
func FuzzPick(f *testing.F) {
	f.Add(uint16(3), uint8(16), uint64(1), 0.25, uint64(7), uint64(0b101), uint64(0), uint8(3))
	f.Add(uint16(0), uint8(0), uint64(0), 0.0, uint64(0), uint64(0), uint64(0), uint8(0))
	f.Add(uint16(300), uint8(4), uint64(99), 0.1, uint64(3), ^uint64(0), uint64(1), uint8(255))
	f.Add(uint16(12), uint8(8), uint64(5), math.Inf(1), uint64(11), uint64(0xfff), uint64(0x3), uint8(12))
	f.Fuzz(func(t *testing.T, members uint16, vnodes uint8, key uint64, eps float64, seed, eligible, skipMask uint64, described uint8) {
		n := int(members % 320)
		r := mustNew(t, memberNames(n), &Options{VNodes: 1 + int(vnodes%16)})
		fl := fuzzFleet(min(n, int(described)), seed, eligible)
		var skip []int
		for b := range 64 {
			if skipMask&(1<<b) != 0 {
				skip = append(skip, b*5-3) // includes negative and out-of-range indices
			}
		}
		got := r.Pick(key, fl, eps, skip)
		if want := referencePick(r, key, fl, eps, skip); got != want {
			t.Fatalf("Pick = %d, reference says %d (members %d, loads %v, eligible %v, eps %v, skip %v)",
				got, want, n, fl.load, fl.eligible, eps, skip)
		}
		if got >= 0 && (got >= fl.Len() || !fl.Eligible(got) || contains(skip, got)) {
			t.Fatalf("Pick = %d, which is undescribed, ineligible or skipped", got)
		}
	})
}

// fuzzFleet derives loads from seed, some negative or huge, and
// eligibility from the bits of eligible (beyond 64 members, alternating).
func fuzzFleet(n int, seed, eligible uint64) fleet {
	fl := fleet{load: make([]int64, n), eligible: make([]bool, n)}
	for i := range n {
		seed = mix64(seed + 0x9e3779b97f4a7c15)
		switch seed % 8 {
		case 0:
			fl.load[i] = int64(seed) // anything, including negative
		case 1:
			fl.load[i] = math.MaxInt64
		default:
			fl.load[i] = int64(seed % 64)
		}
		fl.eligible[i] = eligible&(1<<(i%64)) != 0 || (i >= 64 && i%2 == 0)
	}
	return fl
}

// referencePick is Pick written naively: exact big-integer capacity, a
// linear walk over every point, no bitset.
func referencePick(r *Ring, key uint64, fl fleet, eps float64, skip []int) int {
	if len(r.hashes) == 0 {
		return -1
	}
	usable := func(i int) bool { return i < fl.Len() && fl.Eligible(i) && !contains(skip, i) }
	c, bounded := referenceCapacity(r, fl, eps)
	h := mix64(key)
	start := sort.Search(len(r.hashes), func(j int) bool { return r.hashes[j] >= h }) % len(r.hashes)
	first := -1
	for k := range r.hashes {
		i := int(r.owners[(start+k)%len(r.hashes)])
		if !usable(i) {
			continue
		}
		if !bounded || big.NewInt(fl.InFlight(i)).Cmp(c) < 0 {
			return i
		}
		if first < 0 {
			first = i
		}
	}
	return first
}

// referenceCapacity is ceil(F * m / (n * 1e6)) with F = (1+eps) in
// millionths, m = 1 + the sum of positive eligible loads, n eligible.
func referenceCapacity(r *Ring, fl fleet, eps float64) (*big.Int, bool) {
	if !(eps > 0) {
		return nil, false
	}
	m, n := big.NewInt(1), int64(0)
	for i := range min(r.Len(), fl.Len()) {
		if fl.Eligible(i) {
			n++
			m.Add(m, big.NewInt(max(fl.InFlight(i), 0)))
		}
	}
	if n == 0 {
		return nil, false
	}
	if m.Cmp(big.NewInt(math.MaxInt64)) > 0 {
		m.SetInt64(math.MaxInt64) // Pick's sum saturates
	}
	factor := big.NewInt(maxFactor)
	if f := (1 + eps) * epsScale; f < maxFactor {
		factor = big.NewInt(int64(math.Round(f)))
	}
	num := new(big.Int).Mul(m, factor)
	den := big.NewInt(n * epsScale)
	num.Add(num, new(big.Int).Sub(den, big.NewInt(1)))
	return num.Div(num, den), true
}

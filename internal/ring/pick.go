package ring

import (
	"math"
	"math/bits"
)

// Loads is what bounded-load picking needs to know of the fleet, by member
// index (the index of the member's name in the slice given to New). Its
// methods are called during Pick and must not block. A member whose index
// is at or above Len is treated as ineligible.
type Loads interface {
	// Len returns the number of members described.
	Len() int
	// InFlight returns member i's requests in flight. Negative values
	// count as zero toward the fleet's total.
	InFlight(i int) int64
	// Eligible reports whether member i may take new work; draining and
	// unhealthy members take none.
	Eligible(i int) bool
}

// Pick returns the index of the member for key: the first member clockwise
// from key's point that is eligible, not in skip, and whose load is within
// the bound; -1 if no member is both eligible and not in skip.
//
// epsilon <= 0 (or NaN) disables the bound: Pick is plain consistent
// hashing. Otherwise, with m = (sum of InFlight over eligible members) + 1
// — the fleet's load once this request is placed — and n eligible members,
// the capacity is c = ceil((1+epsilon) * m / n), and a member with
// InFlight >= c is passed over (Mirrokni, Thorup and Zadimoghaddam). Because
// n*c > m-1, some eligible member is always under capacity; only when skip
// excludes all of those does Pick fall back to the first eligible,
// non-skipped member clockwise, so work is never refused while a member
// can take it. epsilon is resolved to millionths.
//
// Skipped indices out of range are ignored. Pick does not allocate; to keep
// the call site free of allocation too, pass a pointer as loads (loads
// escapes, as any interface whose methods are called may). Pick calls
// loads.Eligible and loads.InFlight once per member for the bound,
// and at most once per member during the walk for rings of up to 256
// members; larger rings may ask again about members past the 256th.
func (r *Ring) Pick(key uint64, loads Loads, epsilon float64, skip []int) int {
	return r.PickFloor(key, loads, epsilon, 0, skip)
}

// PickFloor is Pick with a floor under the bound: a member with fewer than
// floor requests in flight is never passed over, whatever the average. At
// low load the bound's ceil((1+epsilon) * m / n) is a handful of requests,
// and passing callers on would break their affinity for no replica's
// benefit; the floor keeps the bound for when load matters.
func (r *Ring) PickFloor(key uint64, loads Loads, epsilon float64, floor int64, skip []int) int {
	if len(r.hashes) == 0 || loads == nil {
		return -1
	}
	limit := uint64(math.MaxUint64) // above every int64: no bound
	if epsilon > 0 {
		var ok bool
		if limit, ok = capacity(loads, len(r.names), epsilon); !ok {
			return -1
		}
		if floor > 0 && limit < uint64(floor) {
			limit = uint64(floor)
		}
	}
	return r.walk(r.search(mix64(key)), loads, limit, skip)
}

// search returns the index of the first point at or after h, wrapping to 0.
func (r *Ring) search(h uint64) int {
	// Branch-free lower bound (Khuong and Morin, "Array Layouts for
	// Comparison-Based Searching", 2017): the answer is in [base, base+n].
	a := r.hashes
	base, n := 0, len(a)
	for n > 1 {
		half := n >> 1
		step := 0
		if a[base+half-1] < h {
			step = half // compiles to a conditional move
		}
		base += step
		n -= half
	}
	if a[base] < h {
		base++
	}
	if base == len(a) {
		return 0
	}
	return base
}

// walk visits points clockwise from start, each member once, and returns
// the first usable member whose load is under limit, else the first usable
// member seen, else -1.
func (r *Ring) walk(start int, loads Loads, limit uint64, skip []int) int {
	n, ln := len(r.names), loads.Len()
	var seen visited
	first := -1
	for k := range len(r.hashes) {
		j := start + k
		if j >= len(r.hashes) {
			j -= len(r.hashes)
		}
		i := int(r.owners[j])
		if !seen.mark(i) {
			continue
		}
		if i < ln && loads.Eligible(i) && !contains(skip, i) {
			if limit == math.MaxUint64 || under(loads.InFlight(i), limit) {
				return i
			}
			if first < 0 {
				first = i
			}
		}
		if seen.count == n {
			break
		}
	}
	return first
}

// trackedMembers is how many members visited tracks exactly, on the stack.
const trackedMembers = 256

// visited is a fixed bitset of the members a walk has already considered,
// so that passing a member's many points costs one bit test each.
type visited struct {
	bits  [trackedMembers / 64]uint64
	count int // distinct tracked members marked
}

// mark records member i and reports whether it was not yet marked. Members
// beyond trackedMembers are not tracked and always count as new.
func (v *visited) mark(i int) bool {
	if i >= trackedMembers {
		return true
	}
	w, b := i>>6, uint64(1)<<(i&63)
	if v.bits[w]&b != 0 {
		return false
	}
	v.bits[w] |= b
	v.count++
	return true
}

func contains(s []int, i int) bool {
	for _, x := range s {
		if x == i {
			return true
		}
	}
	return false
}

// epsScale is the fixed-point scale at which epsilon enters the bound.
const epsScale = 1_000_000

// maxFactor caps (1+epsilon)*epsScale so that m*factor fits in 128 bits;
// an epsilon of about a billion is no practical bound anyway.
const maxFactor = 1 << 50

// under reports whether load is below the capacity c.
func under(load int64, c uint64) bool { return load < 0 || uint64(load) < c }

// capacity returns c = ceil((1+epsilon) * m / n) over the first members
// members (m and n as in Pick), and false if no member is eligible. It
// computes in 128-bit integers, since in floating point ceil(1.1 * 10) is
// 12, and saturates at math.MaxUint64, above every load.
func capacity(loads Loads, members int, epsilon float64) (uint64, bool) {
	members = min(members, loads.Len())
	var sum int64
	eligible := 0
	for i := range members {
		if !loads.Eligible(i) {
			continue
		}
		eligible++
		if l := loads.InFlight(i); l > 0 {
			sum = satAdd(sum, l)
		}
	}
	if eligible == 0 {
		return 0, false
	}
	m := uint64(satAdd(sum, 1))
	factor := uint64(maxFactor)
	if f := (1 + epsilon) * epsScale; f < maxFactor {
		factor = uint64(math.Round(f))
	}
	den := uint64(eligible) * epsScale
	hi, lo := bits.Mul64(m, factor)
	lo, carry := bits.Add64(lo, den-1, 0)
	hi += carry
	if hi >= den {
		return math.MaxUint64, true
	}
	c, _ := bits.Div64(hi, lo, den)
	return c, true
}

// satAdd returns a+b for b >= 0, saturating at math.MaxInt64.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

package ring

import "strconv"

// FNV-1a 64-bit parameters (draft-eastlake-fnv, section 6).
const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// pointHash returns the ring position of a member's vnode-th virtual node:
// mix64(FNV-1a-64(name + "#" + decimal(vnode))). It is part of the wire
// contract between gateway processes: every process, on every machine and
// in every release, must place a member's points identically, or two
// gateways would route the same key to different members. Golden values in
// the tests pin it.
func pointHash(name string, vnode int) uint64 {
	h := uint64(fnvOffset64)
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= fnvPrime64
	}
	var buf [1 + 20]byte
	suffix := strconv.AppendInt(append(buf[:0], '#'), int64(vnode), 10)
	for _, c := range suffix {
		h ^= uint64(c)
		h *= fnvPrime64
	}
	return mix64(h)
}

// mix64 is the splitmix64 finaliser (Steele, Lea and Flood, "Fast
// Splittable Pseudorandom Number Generators", 2014): a bijection on uint64
// whose every output bit depends on every input bit. Pick passes keys
// through it so that keys which are not already well mixed (small counters,
// truncated hashes) still land uniformly on the ring.
func mix64(z uint64) uint64 {
	z ^= z >> 30
	z *= 0xbf58476d1ce4e5b9
	z ^= z >> 27
	z *= 0x94d049bb133111eb
	z ^= z >> 31
	return z
}

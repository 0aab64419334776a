package ring

import (
	"hash/fnv"
	"strconv"
	"testing"
)

// TestPointHashGolden pins member placement: gateway processes of different
// builds must place points identically, so these values may never change.
func TestPointHashGolden(t *testing.T) {
	tests := []struct {
		name  string
		vnode int
		want  uint64
	}{
		{"", 0, 0xcadcb3d88cdacb22},
		{"a", 0, 0xb9b5fec617b7e565},
		{"replica-0", 0, 0x75da1e78307c14c7},
		{"replica-0", 1, 0x3974b12e0bf0b2af},
		{"10.0.0.5:8080", 255, 0x6174fc0fae9f9b9a},
	}
	for _, tt := range tests {
		t.Run(tt.name+"#"+strconv.Itoa(tt.vnode), func(t *testing.T) {
			if got := pointHash(tt.name, tt.vnode); got != tt.want {
				t.Errorf("pointHash = %#x, want %#x", got, tt.want)
			}
		})
	}
}

// TestPointHashIsFNV1aThenMix checks pointHash against the standard
// library's FNV-1a, so the golden values above rest on a known algorithm.
func TestPointHashIsFNV1aThenMix(t *testing.T) {
	for _, name := range []string{"", "a", "replica-7", "10.0.0.5:8080", "ünïcode"} {
		for _, v := range []int{0, 1, 9, 10, 255, 65535} {
			h := fnv.New64a()
			h.Write([]byte(name + "#" + strconv.Itoa(v)))
			if got, want := pointHash(name, v), mix64(h.Sum64()); got != want {
				t.Errorf("pointHash(%q, %d) = %#x, want %#x", name, v, got, want)
			}
		}
	}
}

// TestMix64 checks the finaliser against splitmix64's published first
// output for seed 0 (state advanced by the golden gamma).
func TestMix64(t *testing.T) {
	tests := []struct{ in, want uint64 }{
		{0, 0},
		{0x9e3779b97f4a7c15, 0xe220a8397b1dcdaf},
		{1, 0x5692161d100b05e5},
	}
	for _, tt := range tests {
		t.Run(strconv.FormatUint(tt.in, 16), func(t *testing.T) {
			if got := mix64(tt.in); got != tt.want {
				t.Errorf("mix64(%#x) = %#x, want %#x", tt.in, got, tt.want)
			}
		})
	}
}

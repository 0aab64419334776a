package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Size is a number of bytes, written as an integer or with a binary unit:
// 262144, 256KiB, 64MiB, 1GiB.
type Size int64

// sizeUnits are the units a Size takes, binary only: "MB" is refused
// rather than read as one of two meanings.
var sizeUnits = []struct {
	suffix string
	mult   int64
}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}}

// ParseSize reads a Size: digits, then optionally KiB, MiB, GiB or TiB,
// nothing else (no sign, space or fraction).
func ParseSize(s string) (Size, error) {
	digits, mult := s, int64(1)
	for _, u := range sizeUnits {
		if d, ok := strings.CutSuffix(s, u.suffix); ok {
			digits, mult = d, u.mult
			break
		}
	}
	if digits == "" || strings.TrimLeft(digits, "0123456789") != "" || (len(digits) > 1 && digits[0] == '0') {
		return 0, fmt.Errorf("want a size such as 262144, 256KiB or 64MiB, got %q", s)
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("size %q overflows", s)
	}
	return Size(n * mult), nil
}

// UnmarshalYAML reads an integer or a string with a unit.
func (z *Size) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return fmt.Errorf("line %d: want a size such as 256KiB", n.Line)
	}
	v, err := ParseSize(s)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*z = v
	return nil
}

// MarshalYAML writes the size in bytes.
func (z Size) MarshalYAML() (any, error) { return int64(z), nil }

// MemoryLimit is memory_limit resolved: a size, a share of the cgroup's
// memory limit, or neither (the default: 90% of the cgroup's limit when
// there is one).
type MemoryLimit struct {
	Bytes int64   // a size; 0 when Share is given or not said
	Share float64 // a share of the cgroup limit, 0 < Share <= 1
	Off   bool    // "off": no budget, even in a cgroup
}

// DefaultMemoryShare is the budget's share of the cgroup's memory limit
// when memory_limit is not said.
const DefaultMemoryShare = 0.9

// ParseMemoryLimit reads memory_limit: "" (the default), "off", a Size, or
// a whole percentage from 1% to 100% of the cgroup's memory limit.
func ParseMemoryLimit(s string) (MemoryLimit, error) {
	switch {
	case s == "":
		return MemoryLimit{Share: DefaultMemoryShare}, nil
	case s == "off":
		return MemoryLimit{Off: true}, nil
	case strings.HasSuffix(s, "%"):
		p, err := strconv.Atoi(strings.TrimSuffix(s, "%"))
		if err != nil || p < 1 || p > 100 || strconv.Itoa(p)+"%" != s {
			return MemoryLimit{}, fmt.Errorf("want a whole percentage from 1%% to 100%%, got %q", s)
		}
		return MemoryLimit{Share: float64(p) / 100}, nil
	}
	z, err := ParseSize(s)
	if err != nil {
		return MemoryLimit{}, fmt.Errorf("want off, a size such as 256MiB, or a share such as 60%%: %w", err)
	}
	if z < 16<<20 {
		return MemoryLimit{}, fmt.Errorf("%s is under 16MiB: the gateway could serve nothing", s)
	}
	return MemoryLimit{Bytes: int64(z)}, nil
}

// Resolve is the budget in bytes given the cgroup's memory limit (0 when
// there is none): 0 means no budget.
func (m MemoryLimit) Resolve(cgroup int64) int64 {
	switch {
	case m.Off:
		return 0
	case m.Bytes > 0:
		return m.Bytes
	case cgroup > 0:
		return int64(float64(cgroup) * m.Share)
	}
	return 0
}

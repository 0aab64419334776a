package bottleneck

import (
	"bytes"
	"math"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// quota is a cgroup v2 CPU limit on this process: the cgroup whose cpu.max
// sets it and the cores it allows, which may be a fraction (1.5).
type quota struct {
	dir   string
	cores float64
}

// findQuota looks for the CPU limit of this process's cgroup v2
// (cgroups(7), the kernel's cgroup-v2 documentation): its path is the
// "0::" line of /proc/self/cgroup, and the smallest cpu.max of that cgroup
// and its ancestors under cgroupRoot is the limit. Without cgroup v2, or
// with no limit, ok is false.
func findQuota(procRoot, cgroupRoot string) (q quota, ok bool) {
	data, err := os.ReadFile(filepath.Join(procRoot, "self", "cgroup"))
	if err != nil {
		return q, false
	}
	p, found := cgroupPath(data)
	if !found {
		return q, false
	}
	// In a container without its own cgroup namespace the path is the
	// host's, and the container's cgroup is mounted as the root.
	for dir := path.Clean(p); ; dir = path.Dir(dir) {
		full := filepath.Join(cgroupRoot, filepath.FromSlash(dir))
		if b, err := os.ReadFile(filepath.Join(full, "cpu.max")); err == nil {
			if cores, limited, err := parseCPUMax(b); err == nil && limited && (!ok || cores < q.cores) {
				q, ok = quota{dir: full, cores: cores}, true
			}
		}
		if dir == "/" {
			return q, ok
		}
	}
}

// usage reads the CPU time the quota's cgroup has used.
func (q quota) usage() (time.Duration, error) {
	data, err := os.ReadFile(filepath.Join(q.dir, "cpu.stat"))
	if err != nil {
		return 0, err
	}
	return parseUsage(data)
}

// cgroupPath returns the cgroup v2 path of a /proc/<pid>/cgroup file: the
// line "0::<path>" (cgroups(7)).
func cgroupPath(data []byte) (string, bool) {
	for line := range strings.SplitSeq(string(data), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok && strings.HasPrefix(p, "/") {
			return p, true
		}
	}
	return "", false
}

// parseCPUMax parses a cgroup v2 cpu.max: "$MAX $PERIOD", the microseconds
// the cgroup may run in each period, MAX "max" for no limit. It returns
// the limit in cores.
func parseCPUMax(data []byte) (cores float64, limited bool, err error) {
	line, ok := bytes.CutSuffix(data, []byte("\n"))
	if !ok {
		line = data
	}
	maxUS, periodUS, ok := bytes.Cut(line, []byte(" "))
	if !ok {
		return 0, false, malformed("cpu.max", "want two fields")
	}
	period, err := parseUint(periodUS)
	if err != nil || period == 0 {
		return 0, false, malformed("cpu.max", "period %q", periodUS)
	}
	if string(maxUS) == "max" {
		return 0, false, nil
	}
	limit, err := parseUint(maxUS)
	if err != nil || limit == 0 {
		return 0, false, malformed("cpu.max", "max %q", maxUS)
	}
	return float64(limit) / float64(period), true, nil
}

// parseUsage returns usage_usec of a cgroup v2 cpu.stat, the CPU time the
// cgroup's processes have used, as lines of "key value".
func parseUsage(data []byte) (time.Duration, error) {
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		v, ok := bytes.CutPrefix(line, []byte("usage_usec "))
		if !ok {
			continue
		}
		n, err := parseUint(v)
		if err != nil || n > math.MaxInt64/uint64(time.Microsecond) {
			return 0, malformed("cpu.stat", "usage_usec %q", v)
		}
		return time.Duration(n) * time.Microsecond, nil
	}
	return 0, malformed("cpu.stat", "no usage_usec")
}

// coresOf returns the machine's core count for a process that may run on
// cpus CPUs under quota q: the quota rounded up, when it is smaller.
func coresOf(cpus int, q quota, ok bool) int {
	if !ok || q.cores >= float64(cpus) {
		return cpus
	}
	return max(1, int(math.Ceil(q.cores)))
}

// MemoryLimit is the memory limit of this process's cgroup v2, in bytes:
// the smallest memory.max of its cgroup and their ancestors, found as
// findQuota finds cpu.max; ok is false without cgroup v2 or without a
// limit.
func MemoryLimit() (bytes int64, ok bool) {
	return memoryLimit("/proc", "/sys/fs/cgroup")
}

func memoryLimit(procRoot, cgroupRoot string) (limit int64, ok bool) {
	data, err := os.ReadFile(filepath.Join(procRoot, "self", "cgroup"))
	if err != nil {
		return 0, false
	}
	p, found := cgroupPath(data)
	if !found {
		return 0, false
	}
	for dir := path.Clean(p); ; dir = path.Dir(dir) {
		if b, err := os.ReadFile(filepath.Join(cgroupRoot, filepath.FromSlash(dir), "memory.max")); err == nil {
			if n, limited, err := parseMemoryMax(b); err == nil && limited && (!ok || n < limit) {
				limit, ok = n, true
			}
		}
		if dir == "/" {
			return limit, ok
		}
	}
}

// parseMemoryMax parses a cgroup v2 memory.max: bytes, or "max" for no
// limit, then a newline.
func parseMemoryMax(data []byte) (n int64, limited bool, err error) {
	s, found := strings.CutSuffix(string(data), "\n")
	switch {
	case !found:
		return 0, false, malformed("memory.max", "no newline")
	case s == "max":
		return 0, false, nil
	}
	v, err := parseUint([]byte(s))
	if err != nil || v == 0 || v > math.MaxInt64 {
		return 0, false, malformed("memory.max", "%q", s)
	}
	return int64(v), true, nil
}

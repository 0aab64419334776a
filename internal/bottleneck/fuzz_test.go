package bottleneck

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzParseStat: ParseStat never panics, refuses with ErrMalformed, and
// whatever it accepts a plain reading (comm up to the last ')', fields
// split on spaces, strconv) reads the same.
func FuzzParseStat(f *testing.F) {
	f.Add([]byte(realStat))
	f.Add([]byte(statLine("7", "a) (b) c", "150", "50", "4", "100")))
	f.Add([]byte(statLine("1", "", "0", "0", "1", "0")))
	f.Add([]byte(statLine("7", "x", "-1", "2", "3", "4")))
	f.Add([]byte("7 (x S 1 1 1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := ParseStat(data)
		if refused(t, err) {
			return
		}
		want, ok := plainStat(string(data))
		if !ok {
			t.Fatalf("ParseStat accepted %q, which a plain reading refuses", data)
		}
		if st != want {
			t.Fatalf("ParseStat(%q) = %+v, a plain reading %+v", data, st, want)
		}
	})
}

// plainStat reads a stat line the obvious way, for FuzzParseStat.
func plainStat(s string) (ProcStat, bool) {
	s = strings.TrimSuffix(s, "\n")
	open, end := strings.Index(s, " ("), strings.LastIndex(s, ")")
	if open < 0 || end < open {
		return ProcStat{}, false
	}
	pid, err := strconv.Atoi(s[:open])
	f := strings.Fields(s[end+1:])
	if err != nil || len(f) < 20 {
		return ProcStat{}, false
	}
	var v [4]uint64
	for i, field := range []int{14, 15, 20, 22} {
		if v[i], err = strconv.ParseUint(f[field-3], 10, 64); err != nil {
			return ProcStat{}, false
		}
	}
	return ProcStat{
		PID: pid, Comm: s[open+2 : end], State: f[0][0],
		UTime: time.Duration(v[0]) * tick, STime: time.Duration(v[1]) * tick,
		Threads: int(v[2]), Start: time.Duration(v[3]) * tick,
	}, true
}

// FuzzParseCPU: ParseCPU never panics, refuses with ErrMalformed, and what
// it accepts has a total of no less than busy, both positive or zero.
func FuzzParseCPU(f *testing.F) {
	f.Add([]byte("cpu  1391678 2279 327284 2300077 18124 0 35099 27220 0 0\ncpu0 1 2 3 4\n"))
	f.Add([]byte("cpu  1 2 3 4"))
	f.Add([]byte("cpu  18446744073709551615 1 0 0\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseCPU(data)
		if refused(t, err) {
			return
		}
		if m.Busy < 0 || m.Total < m.Busy {
			t.Fatalf("ParseCPU(%q) = %+v", data, m)
		}
	})
}

// FuzzParseSmallFiles: the parsers of /proc/uptime, cpu.max and cpu.stat
// never panic and refuse with ErrMalformed.
func FuzzParseSmallFiles(f *testing.F) {
	f.Add([]byte("20633.46 23000.78\n"))
	f.Add([]byte("150000 100000\n"))
	f.Add([]byte("max 100000\n"))
	f.Add([]byte("1073741824\n"))
	f.Add([]byte("usage_usec 1500000\nuser_usec 1000000\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if d, err := parseUptime(data); err == nil && d < 0 {
			t.Fatalf("parseUptime(%q) = %v", data, d)
		} else {
			refused(t, err)
		}
		if c, limited, err := parseCPUMax(data); err == nil && limited && c <= 0 {
			t.Fatalf("parseCPUMax(%q) = %v", data, c)
		} else {
			refused(t, err)
		}
		if n, limited, err := parseMemoryMax(data); err == nil && limited && n <= 0 {
			t.Fatalf("parseMemoryMax(%q) = %v", data, n)
		} else {
			refused(t, err)
		}
		if d, err := parseUsage(data); err == nil && d < 0 {
			t.Fatalf("parseUsage(%q) = %v", data, d)
		} else {
			refused(t, err)
		}
	})
}

// refused reports whether a parser refused its input, failing the test if
// its error does not wrap ErrMalformed.
func refused(t *testing.T, err error) bool {
	t.Helper()
	if err != nil && !errors.Is(err, ErrMalformed) {
		t.Fatalf("error %v does not wrap ErrMalformed", err)
	}
	return err != nil
}

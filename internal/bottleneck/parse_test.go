package bottleneck

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// realStat is a /proc/<pid>/stat line as a 6.x kernel prints it.
const realStat = "22405 (cat) R 22402 22402 19490 0 -1 4194304 99 0 0 0 7 3 0 0 20 0 1 0 2063345 3133440 378 18446744073709551615 94911375716352 94911375736233 140728672983136 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 94911375752240 94911375753856 94911853879296 140728672987834 140728672987854 140728672987854 140728672989163 0\n"

// statLine builds a stat line with comm and the numbers the finder keeps.
func statLine(pid, comm string, utime, stime, threads, start string) string {
	f := strings.Fields("S 1 1 1 0 -1 4194304 99 0 0 0 UT ST 0 0 20 0 TH 0 START 3133440 378")
	f[11], f[12], f[17], f[19] = utime, stime, threads, start
	return pid + " (" + comm + ") " + strings.Join(f, " ") + "\n"
}

func TestParseStatReadsTheFields(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want ProcStat
	}{
		{"a kernel's line", realStat, ProcStat{PID: 22405, Comm: "cat", State: 'R', UTime: 70 * time.Millisecond, STime: 30 * time.Millisecond, Threads: 1, Start: 20633450 * time.Millisecond}},
		{"comm with spaces and parentheses", statLine("7", "a) (b) c", "150", "50", "4", "100"),
			ProcStat{PID: 7, Comm: "a) (b) c", State: 'S', UTime: 1500 * time.Millisecond, STime: 500 * time.Millisecond, Threads: 4, Start: time.Second}},
		{"comm ending in ') '", statLine("7", "x) 1 2 )", "1", "2", "3", "4"),
			ProcStat{PID: 7, Comm: "x) 1 2 )", State: 'S', UTime: 10 * time.Millisecond, STime: 20 * time.Millisecond, Threads: 3, Start: 40 * time.Millisecond}},
		{"empty comm, no newline", strings.TrimSuffix(statLine("1", "", "0", "0", "1", "0"), "\n"),
			ProcStat{PID: 1, State: 'S', Threads: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseStat([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseStat (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseStatRefusesMalformed(t *testing.T) {
	good := statLine("7", "x", "1", "2", "3", "4")
	tests := map[string]string{
		"empty":                "",
		"no comm":              "7 x S 1",
		"no closing paren":     "7 (x S 1 1 1",
		"pid zero":             statLine("0", "x", "1", "2", "3", "4"),
		"pid with a sign":      statLine("+7", "x", "1", "2", "3", "4"),
		"pid leading zero":     statLine("07", "x", "1", "2", "3", "4"),
		"pid too large":        statLine("4294967296", "x", "1", "2", "3", "4"),
		"utime negative":       statLine("7", "x", "-1", "2", "3", "4"),
		"utime not a number":   statLine("7", "x", "1x", "2", "3", "4"),
		"utime leading zero":   statLine("7", "x", "01", "2", "3", "4"),
		"utime overflows":      statLine("7", "x", "18446744073709551616", "2", "3", "4"),
		"utime too many ticks": statLine("7", "x", "18446744073709551615", "2", "3", "4"),
		"starttime negative":   statLine("7", "x", "1", "2", "3", "-4"),
		"threads huge":         statLine("7", "x", "1", "2", "2147483648", "4"),
		"minus zero":           strings.Replace(good, " -1 ", " -0 ", 1),
		"too few fields":       "7 (x) S 1 1 1 0 -1 4194304 99 0 0 0 1 2 0 0 20 0 3 0\n",
		"two spaces":           strings.Replace(good, "S 1", "S  1", 1),
		"tab":                  strings.Replace(good, "S 1", "S\t1", 1),
		"no space after comm":  strings.Replace(good, "(x) ", "(x)", 1),
		"state two letters":    strings.Replace(good, ") S ", ") SS ", 1),
		"state a digit":        strings.Replace(good, ") S ", ") 5 ", 1),
		"two newlines":         good + "\n",
		"CRLF":                 strings.TrimSuffix(good, "\n") + "\r\n",
		"trailing space":       strings.TrimSuffix(good, "\n") + " \n",
		"leading space":        " " + good,
	}
	for name, in := range tests {
		t.Run(name, func(t *testing.T) {
			st, err := ParseStat([]byte(in))
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("ParseStat(%q) = %+v, %v; want an error wrapping ErrMalformed", in, st, err)
			}
		})
	}
}

func TestParseCPUReadsTheAggregateLine(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Machine
	}{
		{"ten fields, guest not counted twice", "cpu  100 20 30 400 50 6 7 8 90 10\ncpu0 1 2 3 4 5 6 7 8 9 10\n",
			Machine{Busy: 171 * tick, Total: 621 * tick, Steal: 8 * tick}},
		{"four fields", "cpu  1 2 3 4", Machine{Busy: 6 * tick, Total: 10 * tick}},
		{"all idle", "cpu  0 0 0 5 5 0 0 0\n", Machine{Total: 10 * tick}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseCPU([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("ParseCPU = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseCPURefusesMalformed(t *testing.T) {
	for name, in := range map[string]string{
		"empty":               "",
		"a cpu0 line first":   "cpu0 1 2 3 4\ncpu  1 2 3 4\n",
		"one space":           "cpu 1 2 3 4\n",
		"three fields":        "cpu  1 2 3\n",
		"eleven fields":       "cpu  1 2 3 4 5 6 7 8 9 10 11\n",
		"negative":            "cpu  1 -2 3 4\n",
		"trailing space":      "cpu  1 2 3 4 \n",
		"overflowing sum":     "cpu  18446744073709551615 1 0 0\n",
		"too many ticks":      "cpu  184467440737095516 1 0 0\n",
		"not a number":        "cpu  1 2 x 4\n",
		"CR before a newline": "cpu  1 2 3 4\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			if m, err := ParseCPU([]byte(in)); !errors.Is(err, ErrMalformed) {
				t.Errorf("ParseCPU(%q) = %+v, %v; want an error wrapping ErrMalformed", in, m, err)
			}
		})
	}
}

func TestParseUptime(t *testing.T) {
	if got, err := parseUptime([]byte("20633.46 23000.78\n")); err != nil || got != 20633460*time.Millisecond {
		t.Errorf("parseUptime = %v, %v; want 20633.46s", got, err)
	}
	for _, in := range []string{"", "1.00", "1.0 2.00", "1 2.00", "1.00 2.00 3.00", "-1.00 2.00", "1.0a 2.00", "01.00 2.00", "1.00  2.00", "99999999999999999999.00 1.00"} {
		if _, err := parseUptime([]byte(in)); !errors.Is(err, ErrMalformed) {
			t.Errorf("parseUptime(%q) = %v, want an error wrapping ErrMalformed", in, err)
		}
	}
}

func TestParseCgroupFiles(t *testing.T) {
	for in, want := range map[string]float64{"150000 100000\n": 1.5, "200000 100000": 2, "50000 100000\n": 0.5} {
		if got, limited, err := parseCPUMax([]byte(in)); err != nil || !limited || got != want {
			t.Errorf("parseCPUMax(%q) = %v, %v, %v; want %v", in, got, limited, err, want)
		}
	}
	if _, limited, err := parseCPUMax([]byte("max 100000\n")); err != nil || limited {
		t.Errorf("parseCPUMax(max) = %v, %v; want no limit", limited, err)
	}
	for _, in := range []string{"", "max", "max 0", "0 100000", "1.5 100000", "max  100000", "100000 100000 1"} {
		if _, _, err := parseCPUMax([]byte(in)); !errors.Is(err, ErrMalformed) {
			t.Errorf("parseCPUMax(%q) = %v, want an error wrapping ErrMalformed", in, err)
		}
	}
	if got, err := parseUsage([]byte("usage_usec 1500000\nuser_usec 1000000\n")); err != nil || got != 1500*time.Millisecond {
		t.Errorf("parseUsage = %v, %v; want 1.5s", got, err)
	}
	for _, in := range []string{"", "user_usec 1\n", "usage_usec -1\n", "usage_usec 1 2\n"} {
		if _, err := parseUsage([]byte(in)); !errors.Is(err, ErrMalformed) {
			t.Errorf("parseUsage(%q) = %v, want an error wrapping ErrMalformed", in, err)
		}
	}
	if p, ok := cgroupPath([]byte("4:memory:/x\n0::/user.slice/a.scope\n")); !ok || p != "/user.slice/a.scope" {
		t.Errorf("cgroupPath = %q, %v", p, ok)
	}
	if _, ok := cgroupPath([]byte("4:memory:/x\n1:cpu:/\n")); ok {
		t.Error("cgroupPath found a cgroup v2 path in a v1 file")
	}
}

func BenchmarkParseStat(b *testing.B) {
	data := []byte(realStat)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ParseStat(data); err != nil {
			b.Fatal(err)
		}
	}
}

// TestMemoryLimitOfTheCgroup: the smallest memory.max of the process's
// cgroup and its ancestors; none without one or with "max" throughout; a
// malformed file is passed over.
func TestMemoryLimitOfTheCgroup(t *testing.T) {
	proc, cg := t.TempDir(), t.TempDir()
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(proc, "self", "cgroup"), "0::/kubepods/pod1/c1\n")
	if _, ok := memoryLimit(proc, cg); ok {
		t.Error("a limit without any memory.max")
	}
	write(filepath.Join(cg, "kubepods", "pod1", "c1", "memory.max"), "max\n")
	write(filepath.Join(cg, "kubepods", "pod1", "memory.max"), "1073741824\n")
	write(filepath.Join(cg, "kubepods", "memory.max"), "2147483648\n")
	write(filepath.Join(cg, "memory.max"), "12 junk\n")
	if n, ok := memoryLimit(proc, cg); !ok || n != 1<<30 {
		t.Errorf("memoryLimit = %d, %v; want the pod's 1 GiB", n, ok)
	}
	for _, in := range []string{"", "max", "0\n", "-1\n", "1.5\n", "01\n", " 1\n"} {
		if _, limited, err := parseMemoryMax([]byte(in)); err == nil && limited {
			t.Errorf("parseMemoryMax(%q): accepted", in)
		}
	}
}

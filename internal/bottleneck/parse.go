package bottleneck

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"time"
)

// userHZ is the unit of the clock ticks in /proc (USER_HZ, proc(5)). It is
// 100 on every Linux architecture Go supports: the kernel fixes it in its
// ABI whatever its internal HZ, and sysconf(_SC_CLK_TCK), which reports
// it, would need cgo to call.
const userHZ = 100

// tick is one clock tick of /proc.
const tick = time.Second / userHZ

// ErrMalformed is wrapped by every parser's error: the bytes are not in the
// format proc(5) gives.
var ErrMalformed = errors.New("malformed")

func malformed(what, format string, args ...any) error {
	return fmt.Errorf("parsing %s: %w: %s", what, ErrMalformed, fmt.Sprintf(format, args...))
}

// ProcStat is what the finder reads of one /proc/<pid>/stat line.
type ProcStat struct {
	PID  int    // field 1
	Comm string // field 2, without its parentheses
	// State is field 3, one letter such as R (running) or S (sleeping).
	State byte
	// UTime and STime are fields 14 and 15: the CPU time the process has
	// spent in user and in kernel mode, its threads included.
	UTime, STime time.Duration
	Threads      int // field 20, num_threads
	// Start is field 22, starttime: when the process started, counted
	// from boot. With the PID it tells a process from a later one that
	// reuses the PID.
	Start time.Duration
}

// CPU is the CPU time the process has spent so far, user and kernel.
func (s ProcStat) CPU() time.Duration { return s.UTime + s.STime }

// statFields is how many fields after comm the finder needs: state
// (field 3) through starttime (field 22).
const statFields = 20

// ParseStat parses the content of /proc/<pid>/stat. The comm field is in
// parentheses and may itself hold spaces and parentheses, so it ends at the
// last ')' of the line (proc(5)). Every other field must be a decimal
// number, one space apart, as the kernel prints them; the line may end in
// one newline.
func ParseStat(data []byte) (ProcStat, error) {
	var st ProcStat
	line, ok := bytes.CutSuffix(data, []byte("\n"))
	if !ok {
		line = data
	}
	open := bytes.Index(line, []byte(" ("))
	end := bytes.LastIndexByte(line, ')')
	if open < 0 || end < open+2 {
		return st, malformed("stat", "no (comm)")
	}
	pid, err := parseUint(line[:open])
	if err != nil || pid == 0 || pid > math.MaxInt32 {
		return st, malformed("stat", "pid %q", line[:open])
	}
	st.PID, st.Comm = int(pid), string(line[open+2:end])
	rest, ok := bytes.CutPrefix(line[end+1:], []byte(" "))
	if !ok {
		return st, malformed("stat", "no space after comm")
	}
	fields := bytes.Split(rest, []byte(" "))
	if len(fields) < statFields {
		return st, malformed("stat", "%d fields after comm, want at least %d", len(fields), statFields)
	}
	if len(fields[0]) != 1 || !isLetter(fields[0][0]) {
		return st, malformed("stat", "state %q", fields[0])
	}
	st.State = fields[0][0]
	for i, f := range fields[1:] {
		if !isDecimal(f) {
			return st, malformed("stat", "field %d %q is not a decimal number", i+4, f)
		}
	}
	return fillStat(st, fields)
}

// fillStat reads the numbers ParseStat keeps, fields checked as decimals.
// fields[0] is field 3 of the line.
func fillStat(st ProcStat, fields [][]byte) (ProcStat, error) {
	num := func(n int) (uint64, error) {
		v, err := parseUint(fields[n-3])
		if err != nil {
			return 0, malformed("stat", "field %d %q", n, fields[n-3])
		}
		return v, nil
	}
	var ticks [3]uint64
	for i, n := range []int{14, 15, 22} {
		v, err := num(n)
		if err != nil {
			return st, err
		}
		if v > math.MaxInt64/uint64(tick) {
			return st, malformed("stat", "field %d %d is too large", n, v)
		}
		ticks[i] = v
	}
	threads, err := num(20)
	if err != nil || threads > math.MaxInt32 {
		return st, malformed("stat", "num_threads %q", fields[20-3])
	}
	st.UTime, st.STime, st.Start = ticksOf(ticks[0]), ticksOf(ticks[1]), ticksOf(ticks[2])
	st.Threads = int(threads)
	if st.UTime+st.STime < 0 {
		return st, malformed("stat", "utime and stime overflow")
	}
	return st, nil
}

func ticksOf(n uint64) time.Duration { return time.Duration(n) * tick }

// Machine is the CPU time of the whole machine so far, every core summed.
type Machine struct {
	Busy  time.Duration // spent on work: user, system, interrupts, steal
	Total time.Duration // there was: Busy, idle and I/O wait
	// Steal is the part of Busy the hypervisor gave to other guests while
	// this machine had work for the CPU: no process of it ran meanwhile.
	Steal time.Duration
}

// ParseCPU parses the aggregate "cpu" line, the first line of /proc/stat:
// user nice system idle iowait irq softirq steal guest guest_nice, in clock
// ticks (proc(5); kernels before 2.6 give fewer, at least four). Guest and
// guest_nice are already counted in user and nice, so they are not added
// again. Busy is the total less idle and iowait; Steal is the eighth.
func ParseCPU(data []byte) (Machine, error) {
	line, _, _ := bytes.Cut(data, []byte("\n"))
	rest, ok := bytes.CutPrefix(line, []byte("cpu  "))
	if !ok {
		return Machine{}, malformed("/proc/stat", "the first line does not start with %q", "cpu  ")
	}
	fields := bytes.Split(rest, []byte(" "))
	if len(fields) < 4 || len(fields) > 10 {
		return Machine{}, malformed("/proc/stat", "%d fields on the cpu line, want 4 to 10", len(fields))
	}
	var total, idle, steal uint64
	for i, f := range fields {
		v, err := parseUint(f)
		if err != nil {
			return Machine{}, malformed("/proc/stat", "cpu field %d %q", i+1, f)
		}
		if i >= 8 { // guest, guest_nice: inside user and nice already
			continue
		}
		if total+v < total {
			return Machine{}, malformed("/proc/stat", "the cpu line overflows")
		}
		total += v
		switch i {
		case 3, 4: // idle, iowait
			idle += v
		case 7:
			steal = v
		}
	}
	if total > math.MaxInt64/uint64(tick) {
		return Machine{}, malformed("/proc/stat", "the cpu line overflows")
	}
	return Machine{Busy: ticksOf(total - idle), Total: ticksOf(total), Steal: ticksOf(steal)}, nil
}

// parseUptime parses /proc/uptime: the seconds since boot and the idle
// seconds, each printed with two decimals ("%lu.%02lu", proc(5)). It
// returns the first.
func parseUptime(data []byte) (time.Duration, error) {
	line, ok := bytes.CutSuffix(data, []byte("\n"))
	if !ok {
		line = data
	}
	up, idle, ok := bytes.Cut(line, []byte(" "))
	if !ok {
		return 0, malformed("/proc/uptime", "want two numbers")
	}
	if _, err := parseCentis(idle); err != nil {
		return 0, malformed("/proc/uptime", "idle %q", idle)
	}
	d, err := parseCentis(up)
	if err != nil {
		return 0, malformed("/proc/uptime", "uptime %q", up)
	}
	return d, nil
}

// parseCentis parses a number of seconds with two decimals, "123.45".
func parseCentis(b []byte) (time.Duration, error) {
	whole, frac, ok := bytes.Cut(b, []byte("."))
	if !ok || len(frac) != 2 || frac[0] < '0' || frac[0] > '9' || frac[1] < '0' || frac[1] > '9' {
		return 0, errors.New("want seconds with two decimals")
	}
	s, err := parseUint(whole)
	if err != nil || s > math.MaxInt64/uint64(time.Second)-1 {
		return 0, errors.New("bad seconds")
	}
	cs := uint64(frac[0]-'0')*10 + uint64(frac[1]-'0')
	return time.Duration(s)*time.Second + time.Duration(cs)*10*time.Millisecond, nil
}

// parseUint parses an unsigned decimal as the kernel prints one: digits
// only, no sign, no leading zero, no more than fits in 64 bits.
func parseUint(b []byte) (uint64, error) {
	if len(b) == 0 || (b[0] == '0' && len(b) > 1) {
		return 0, errors.New("not a canonical decimal")
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, errors.New("not a decimal")
		}
		d := uint64(c - '0')
		if n > (math.MaxUint64-d)/10 {
			return 0, errors.New("out of range")
		}
		n = n*10 + d
	}
	return n, nil
}

// isDecimal reports whether b is a field of /proc/<pid>/stat: an unsigned
// decimal of 64 bits, or a negative one ("-1") of 63.
func isDecimal(b []byte) bool {
	if neg, ok := bytes.CutPrefix(b, []byte("-")); ok {
		n, err := parseUint(neg)
		return err == nil && n != 0 && n <= 1<<63
	}
	_, err := parseUint(b)
	return err == nil
}

func isLetter(c byte) bool { return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' }

// Package bottleneck finds where the CPU of a load test goes, on Linux:
// it samples /proc for the gateway processes, the replicas, any store, the
// balancer and the load generator itself, each as a share of one core and
// of the whole machine, and says whether a process is pinned at its cores
// or the machine is out of CPU, which decides whether more replicas help.
//
// The parsers and Analyze are pure; Sampler does the reading.
package bottleneck

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"
)

const procRoot = "/proc"

// Options configure a Sampler. The zero value reads the real system.
type Options struct {
	// ProcRoot is where proc(5) is mounted; "" means /proc.
	ProcRoot string
	// CgroupRoot is where cgroup v2 is mounted; "" means /sys/fs/cgroup.
	CgroupRoot string
	// CPUs is how many CPUs the processes may run on; 0 means
	// runtime.NumCPU (the CPUs this process may use, as nproc says).
	CPUs int
}

// Snapshot is one sample: the machine and every process seen so far.
type Snapshot struct {
	At time.Time
	// Uptime is the time since boot (/proc/uptime), the clock of
	// Proc.Start.
	Uptime time.Duration
	// Machine is the CPU time of the machine, or of the cgroup under a
	// CPU quota, so far.
	Machine Machine
	// Procs holds every process the Sampler has seen, those gone
	// included, by Name and then PID.
	Procs []Proc
}

// Proc is one process in a Snapshot.
type Proc struct {
	Target
	// Start is when the process started, since boot; with PID it names
	// the process.
	Start time.Duration
	// CPU is the CPU time the process had used when last seen; Base is
	// what it had used when first seen.
	CPU, Base time.Duration
	// Gone says the process has exited (or was never found): CPU is what
	// it had used when last seen.
	Gone bool
}

// Sampler samples the CPU of the machine and of the processes it watches.
// Its methods are safe for concurrent use.
type Sampler struct {
	proc   string
	quota  quota
	quoted bool // a CPU quota below the CPUs is in force
	cores  int
	epoch  time.Time // the clock of Machine.Total under a quota

	mu      sync.Mutex // guards pending and procs
	pending []Target   // added, not yet sampled
	procs   []*Proc    // every process seen, in order of first sight
}

// New returns a Sampler that watches nothing yet; nil opts means the
// defaults. Under a cgroup v2 CPU quota smaller than the CPUs, the quota
// is the machine: its cores and its cgroup's CPU time.
func New(opts *Options) *Sampler {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.ProcRoot == "" {
		o.ProcRoot = procRoot
	}
	if o.CgroupRoot == "" {
		o.CgroupRoot = "/sys/fs/cgroup"
	}
	if o.CPUs <= 0 {
		o.CPUs = runtime.NumCPU()
	}
	q, ok := findQuota(o.ProcRoot, o.CgroupRoot)
	s := &Sampler{proc: o.ProcRoot, quota: q, cores: coresOf(o.CPUs, q, ok), epoch: time.Now()}
	s.quoted = ok && q.cores < float64(o.CPUs)
	return s
}

// Cores returns how many cores the machine has for the processes: the
// CPUs, or a smaller cgroup quota rounded up. It is what Analyze takes.
func (s *Sampler) Cores() int { return s.cores }

// Add watches more processes from the next Sample on. A target under a
// Name already watched adds to it: the earlier processes of that Name are
// still watched until they exit, and the CPU of all of them counts.
func (s *Sampler) Add(targets ...Target) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending = append(s.pending, targets...)
}

// Sample reads the machine and every watched process. A process that has
// exited is marked Gone, not an error.
func (s *Sampler) Sample() (Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap := Snapshot{At: time.Now()}
	var err error
	if snap.Uptime, err = readWith(filepath.Join(s.proc, "uptime"), parseUptime); err != nil {
		return Snapshot{}, err
	}
	if snap.Machine, err = s.machine(snap.At); err != nil {
		return Snapshot{}, err
	}
	for _, p := range s.procs {
		if err := s.refreshLocked(p); err != nil {
			return Snapshot{}, err
		}
	}
	for _, t := range s.pending {
		if err := s.addLocked(t); err != nil {
			return Snapshot{}, err
		}
	}
	s.pending = nil
	snap.Procs = make([]Proc, len(s.procs))
	for i, p := range s.procs {
		snap.Procs[i] = *p
	}
	slices.SortFunc(snap.Procs, func(a, b Proc) int {
		if a.Name != b.Name {
			return cmp.Compare(a.Name, b.Name)
		}
		return a.PID - b.PID
	})
	return snap, nil
}

// machine reads the machine's CPU time, or the quota's cgroup's.
func (s *Sampler) machine(now time.Time) (Machine, error) {
	if !s.quoted {
		return readWith(filepath.Join(s.proc, "stat"), ParseCPU)
	}
	used, err := s.quota.usage()
	if err != nil {
		return Machine{}, fmt.Errorf("reading the cgroup's CPU time: %w", err)
	}
	return Machine{Busy: used, Total: time.Duration(s.quota.cores * float64(now.Sub(s.epoch)))}, nil
}

// refreshLocked reads p again, unless it is gone.
func (s *Sampler) refreshLocked(p *Proc) error {
	if p.Gone {
		return nil
	}
	st, found, err := s.stat(p.PID)
	switch {
	case err != nil:
		return err
	case !found || st.Start != p.Start: // exited, its PID perhaps reused
		p.Gone = true
	default:
		p.CPU = st.CPU()
	}
	return nil
}

// addLocked starts watching t, unless its process is watched already.
func (s *Sampler) addLocked(t Target) error {
	st, found, err := s.stat(t.PID)
	if err != nil {
		return err
	}
	if !found {
		s.procs = append(s.procs, &Proc{Target: t, Gone: true})
		return nil
	}
	for _, p := range s.procs {
		if p.PID == t.PID && p.Start == st.Start {
			return nil
		}
	}
	s.procs = append(s.procs, &Proc{Target: t, Start: st.Start, CPU: st.CPU(), Base: st.CPU()})
	return nil
}

// stat reads /proc/<pid>/stat; found is false when the process is gone.
func (s *Sampler) stat(pid int) (st ProcStat, found bool, err error) {
	data, err := os.ReadFile(filepath.Join(s.proc, strconv.Itoa(pid), "stat"))
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return st, false, nil
	}
	if err != nil {
		return st, false, fmt.Errorf("reading process %d: %w", pid, err)
	}
	if st, err = ParseStat(data); err != nil {
		return st, false, fmt.Errorf("reading process %d: %w", pid, err)
	}
	return st, true, nil
}

// Run samples at once, then every interval, and once more when ctx is
// done, and returns the snapshots in order: the first and the last for
// Analyze, all of them for Peak. Sampling often also loses less of a
// process that exits, whose CPU counts up to its last sample. An interval
// of zero or less samples only at the start and the end.
func (s *Sampler) Run(ctx context.Context, interval time.Duration) ([]Snapshot, error) {
	first, err := s.Sample()
	if err != nil {
		return nil, err
	}
	snaps := []Snapshot{first}
	var tick <-chan time.Time
	if interval > 0 {
		t := time.NewTicker(interval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			last, err := s.Sample()
			if err != nil {
				return snaps, err
			}
			return append(snaps, last), nil
		case <-tick:
			snap, err := s.Sample()
			if err != nil {
				return snaps, err
			}
			snaps = append(snaps, snap)
		}
	}
}

// readWith reads a file and parses it.
func readWith[T any](name string, parse func([]byte) (T, error)) (T, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		var zero T
		return zero, fmt.Errorf("reading %s: %w", name, err)
	}
	return parse(data)
}

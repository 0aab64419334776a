package bottleneck

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// fakeProc is a directory laid out as proc(5), with the files Sampler reads.
type fakeProc struct {
	t    *testing.T
	root string
}

func newFakeProc(t *testing.T) fakeProc {
	t.Helper()
	f := fakeProc{t: t, root: t.TempDir()}
	f.write("uptime", "100.00 150.00\n")
	f.write("stat", "cpu  100 0 100 800 0 0 0 0 0 0\ncpu0 1 2 3 4\n")
	return f
}

func (f fakeProc) write(name, content string) {
	f.t.Helper()
	p := filepath.Join(f.root, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// process writes /proc/<pid>/stat: started start ticks after boot, cpu
// ticks used.
func (f fakeProc) process(pid, start, cpu int) {
	f.t.Helper()
	f.write(strconv.Itoa(pid)+"/stat", statLine(strconv.Itoa(pid), "testserver", strconv.Itoa(cpu), "0", "1", strconv.Itoa(start)))
}

func (f fakeProc) exit(pid int) {
	f.t.Helper()
	if err := os.RemoveAll(filepath.Join(f.root, strconv.Itoa(pid))); err != nil {
		f.t.Fatal(err)
	}
}

func sample(t *testing.T, s *Sampler) Snapshot {
	t.Helper()
	snap, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// TestSamplerFollowsExitsReusedPIDsAndRestarts: a process that exits is
// gone, so is one whose PID another process took; a replica restarted
// under its Name adds up.
func TestSamplerFollowsExitsReusedPIDsAndRestarts(t *testing.T) {
	f := newFakeProc(t)
	f.process(10, 5000, 100) // replica-1, up since 50 s after boot
	f.process(11, 5000, 100) // replica-2
	s := New(&Options{ProcRoot: f.root, CgroupRoot: t.TempDir(), CPUs: 2})
	s.Add(Target{Name: "replica-1", Role: RoleReplica, PID: 10, Cores: 1},
		Target{Name: "replica-2", Role: RoleReplica, PID: 11, Cores: 1},
		Target{Name: "never", Role: RoleOther, PID: 12})
	first := sample(t, s)
	if p := first.Procs[0]; p.Name != "never" || !p.Gone {
		t.Errorf("a target that never ran: %+v, want it gone", p)
	}
	f.process(10, 5000, 150)
	f.exit(11)
	f.write("uptime", "100.50 150.00\n")
	mid := sample(t, s)
	f.exit(10)
	f.process(11, 10060, 30) // PID 11 reused by another process
	f.process(20, 10060, 40) // replica-1 again, started 100.6 s after boot
	s.Add(Target{Name: "replica-1", Role: RoleReplica, PID: 20, Cores: 1})
	sample(t, s)
	f.process(20, 10060, 60)
	last := sample(t, s)
	last.At = first.At.Add(time.Second)

	gone := map[int]bool{}
	for _, p := range last.Procs {
		gone[p.PID] = p.Gone
	}
	if !gone[10] || !gone[11] || !gone[12] || gone[20] {
		t.Errorf("gone %v, want 10, 11 and 12 gone, 20 running", gone)
	}
	r := Analyze(first, last, s.Cores())
	// replica-1: 0.5 s from PID 10 before it exited, 0.6 s from PID 20.
	if len(r.Processes) != 3 || r.Processes[0].Name != "replica-1" || r.Processes[0].CPUCores != 1.1 || r.Processes[0].PID != 20 {
		t.Errorf("processes %+v, want replica-1 first at 1.1 cores, PID 20", r.Processes)
	}
	if mid.Procs[2].CPU != time.Second || !mid.Procs[2].Gone {
		t.Errorf("replica-2 in the middle sample %+v, want gone with its last CPU", mid.Procs[2])
	}
}

// TestSamplerTakesTheCgroupQuota: under a cpu.max smaller than the CPUs,
// the machine is the quota, rounded up, and its CPU time the cgroup's.
func TestSamplerTakesTheCgroupQuota(t *testing.T) {
	f := newFakeProc(t)
	f.write("self/cgroup", "0::/a/b\n")
	cg := t.TempDir()
	for name, content := range map[string]string{
		"a/b/cpu.max": "max 100000\n",
		"a/cpu.max":   "150000 100000\n",
		"a/cpu.stat":  "usage_usec 2500000\nuser_usec 2000000\n",
		"cpu.max":     "300000 100000\n",
	} {
		if err := os.MkdirAll(filepath.Join(cg, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(cg, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := New(&Options{ProcRoot: f.root, CgroupRoot: cg, CPUs: 4})
	if s.Cores() != 2 {
		t.Errorf("Cores = %d, want 2 (1.5 rounded up)", s.Cores())
	}
	if m := sample(t, s).Machine; m.Busy != 2500*time.Millisecond || m.Total <= 0 {
		t.Errorf("machine %+v, want the cgroup's 2.5 s", m)
	}
	if s := New(&Options{ProcRoot: f.root, CgroupRoot: cg, CPUs: 1}); s.Cores() != 1 {
		t.Errorf("Cores = %d under a quota larger than the CPUs, want 1", s.Cores())
	}
}

package bottleneck

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// The roles a watched process plays in a load test.
const (
	RoleGateway       = "gateway"
	RoleReplica       = "replica"
	RoleStore         = "store"
	RoleBalancer      = "balancer"
	RoleLoadGenerator = "load generator"
	RoleOther         = "other"
)

// Target is a process to watch.
type Target struct {
	// Name is how reports call it. Processes added under one Name count
	// as one: a replica restarted by a rolling deploy keeps its Name under
	// a new PID, and its CPU adds up.
	Name string
	// Role is one of the Role constants; any other counts as RoleOther.
	Role string
	PID  int
	// Cores is the most cores the process can use, when known: 1 for a Go
	// server run with GOMAXPROCS=1. Zero means unknown, counted as one.
	Cores float64
}

// Self returns this process as the load generator, its Cores its
// GOMAXPROCS.
func Self() Target {
	pid := os.Getpid()
	return Target{Name: nameOf(procRoot, pid), Role: RoleLoadGenerator, PID: pid, Cores: float64(runtime.GOMAXPROCS(0))}
}

// ByPID returns targets of role for the given running processes, each
// named by its comm and PID ("testserver/4242"). A PID that is not running
// is an error.
func ByPID(role string, pids ...int) ([]Target, error) {
	targets := make([]Target, 0, len(pids))
	for _, pid := range pids {
		if pid <= 0 {
			return nil, fmt.Errorf("watching process %d: not a PID", pid)
		}
		if _, err := os.Stat(filepath.Join(procRoot, strconv.Itoa(pid))); err != nil {
			return nil, fmt.Errorf("watching process %d: %w", pid, err)
		}
		targets = append(targets, Target{Name: nameOf(procRoot, pid), Role: role, PID: pid})
	}
	return targets, nil
}

// Match returns the PIDs, in order, of the running processes whose comm
// or command line contains pattern, this process left out.
func Match(pattern string) ([]int, error) {
	return match(procRoot, pattern, os.Getpid())
}

func match(root, pattern string, self int) ([]int, error) {
	if pattern == "" {
		return nil, fmt.Errorf("matching processes: empty pattern")
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("matching processes: %w", err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 || pid == self {
			continue
		}
		dir := filepath.Join(root, e.Name())
		comm, _ := os.ReadFile(filepath.Join(dir, "comm"))
		cmdline, _ := os.ReadFile(filepath.Join(dir, "cmdline"))
		// cmdline separates the arguments with NUL bytes (proc(5)).
		cmdline = bytes.ReplaceAll(cmdline, []byte{0}, []byte(" "))
		if strings.Contains(string(comm), pattern) || strings.Contains(string(cmdline), pattern) {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	return pids, nil
}

// nameOf names a process by its comm and PID, or by its PID alone when
// comm cannot be read.
func nameOf(root string, pid int) string {
	comm, err := os.ReadFile(filepath.Join(root, strconv.Itoa(pid), "comm"))
	name := strings.TrimSuffix(string(comm), "\n")
	if err != nil || name == "" {
		return strconv.Itoa(pid)
	}
	return name + "/" + strconv.Itoa(pid)
}

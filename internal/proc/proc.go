// Package proc runs the real programs a chaos run puts around a fleet
// (redis-server, HAProxy, mcpfleet serve itself) as child processes on
// loopback: each keeps the end of its output for a report, and each is
// stopped by its owner, gently (SIGTERM) or at once (SIGKILL).
package proc

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// tailBytes is how much of a process's output is kept: the end of it,
// where the reason it stopped is.
const tailBytes = 64 << 10

// Process is a running child process. Its methods are safe for concurrent
// use.
type Process struct {
	// Name says which process this is in errors and reports.
	Name string

	cmd    *exec.Cmd
	out    *tail
	exited chan struct{} // closed once Wait has returned
	err    error         // Wait's result; read after exited is closed
}

// Start runs bin with args, its stdout and stderr kept together (the end
// of them, see Output).
func Start(name, bin string, args ...string) (*Process, error) {
	return StartEnv(name, bin, nil, args...)
}

// StartEnv is Start with env (KEY=value) added to this process's
// environment.
func StartEnv(name, bin string, env []string, args ...string) (*Process, error) {
	p := &Process{Name: name, cmd: exec.Command(bin, args...), out: &tail{}, exited: make(chan struct{})}
	if len(env) > 0 {
		p.cmd.Env = append(os.Environ(), env...)
	}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// PID is the process's ID.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited is closed once the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Err is how the process exited (nil for status 0); it blocks until it has.
func (p *Process) Err() error {
	<-p.exited
	return p.err
}

// Terminate sends SIGTERM: the process stops as it does for an operator.
func (p *Process) Terminate() error {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signalling %s: %w", p.Name, err)
	}
	return nil
}

// Stop sends SIGTERM, waits up to timeout for the process to exit, then
// kills it, and returns once it has exited. It may be called more than
// once, and on a process that has exited.
func (p *Process) Stop(timeout time.Duration) {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.Terminate() // an error means it has gone already
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.exited:
	case <-t.C:
		p.Kill()
	}
}

// Kill sends SIGKILL and returns once the process has exited.
func (p *Process) Kill() {
	_ = p.cmd.Process.Kill() // os.ErrProcessDone: it has exited
	<-p.exited
}

// Output returns the end of what the process wrote, stdout and stderr
// interleaved.
func (p *Process) Output() string { return p.out.String() }

// LastLines returns the last n lines of s, an output: where a process
// says why it stopped.
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// Lookup returns the path of the program name, found on PATH or in
// /usr/sbin (where Debian puts haproxy). Its error names the Debian package
// pkg that installs it.
func Lookup(name, pkg string) (string, error) {
	for _, p := range []string{name, filepath.Join("/usr/sbin", name)} {
		if path, err := exec.LookPath(p); err == nil {
			return path, nil
		}
	}
	return "", fmt.Errorf("%s not found on PATH or in /usr/sbin: install it (apt-get install %s)", name, pkg)
}

// FreeAddr returns a loopback address whose port was free a moment ago.
// Another process may take it before the caller binds it: callers that
// start a server on it retry with a new one. The port is drawn at random
// from below the kernel's ephemeral range, which is where a bind to port 0
// and an outgoing connection get theirs: a test elsewhere on the machine
// that listens on port 0 cannot be given it meanwhile, as it could be a
// port the kernel picked. One process is not given the same port twice.
func FreeAddr() (string, error) { return freeAddr(0) }

// freeAddr is FreeAddr for a port that must have port+above free beside
// it (above > 0), both below the ephemeral range when it can be read.
func freeAddr(above int) (string, error) {
	freePorts.Lock()
	defer freePorts.Unlock()
	lo, hi := pickRange()
	hi = min(hi-above, 65536-above)
	for range 64 {
		if lo >= hi {
			break
		}
		port := lo + rand.IntN(hi-lo)
		if freePorts.given[port] || (above > 0 && freePorts.given[port+above]) {
			continue
		}
		if !listenable(port) || (above > 0 && !listenable(port+above)) {
			continue
		}
		freePorts.given[port] = true
		if above > 0 {
			freePorts.given[port+above] = true
		}
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), nil
	}
	// No range (not Linux), or none free in it: what the kernel gives.
	for range 64 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", fmt.Errorf("finding a free port: %w", err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if above == 0 || (port+above < 65536 && listenable(port+above)) {
			return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), nil
		}
	}
	return "", fmt.Errorf("finding a free port and port+%d: none in 64 tries", above)
}

// listenable says whether a listener could be opened on the loopback port
// a moment ago.
func listenable(port int) bool {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// freePorts is the ports FreeAddr has handed out in this process.
var freePorts = struct {
	sync.Mutex
	given map[int]bool
}{given: map[int]bool{}}

// pickRange is the ports FreeAddr draws from: the 16384 below the start of
// Linux's ephemeral range (net.ipv4.ip_local_port_range), none below 1024.
// Elsewhere it is empty, and FreeAddr asks for port 0.
func pickRange() (lo, hi int) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0
	}
	start, err := strconv.Atoi(f[0])
	if err != nil {
		return 0, 0
	}
	return max(1024, start-16384), start
}

// tail keeps the last tailBytes written to it.
type tail struct {
	mu sync.Mutex // guards b
	b  []byte
}

// Write keeps p, dropping the oldest bytes beyond tailBytes.
func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - tailBytes; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

// String returns what is kept.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// Package testproc starts the real processes that integration tests put
// around a fleet (nginx, HAProxy, ...) on loopback, and stops every one it
// starts. It is for tests only.
package testproc

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/proc"
)

// FindBinary returns the path of name, looked up in PATH and /usr/sbin. If
// it is missing the test skips, or fails when the environment variable
// require is "1" (CI sets it once it has installed pkg).
func FindBinary(t testing.TB, name, pkg, require string) string {
	t.Helper()
	if path, err := proc.Lookup(name, pkg); err == nil {
		return path
	}
	msg := name + " not installed (Debian package " + pkg + ")"
	if os.Getenv(require) == "1" {
		t.Fatal(msg + ", and " + require + "=1")
	}
	t.Skip(msg + "; set " + require + "=1 to fail instead")
	return ""
}

// FreeAddr returns a loopback address with a port that was free a moment
// ago, drawn from outside the ports the kernel hands out (proc.FreeAddr).
func FreeAddr(t testing.TB) string {
	t.Helper()
	addr, err := proc.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// Start runs bin until the test ends, then stops it with SIGTERM (SIGKILL
// after five seconds). If it exits at once, the test fails with its output.
func Start(t testing.TB, bin string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("starting %s: %v", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cancel()
		<-exited
		if t.Failed() {
			t.Logf("%s output:\n%s", filepath.Base(bin), out.String())
		}
	})
	select {
	case err := <-exited:
		exited <- err // for the cleanup
		t.Fatalf("%s exited at once: %v\n%s", bin, err, out.String())
	case <-time.After(100 * time.Millisecond):
	}
}

// WaitReady polls u until it answers 200, for up to ten seconds.
func WaitReady(t testing.TB, u string) {
	t.Helper()
	WaitReadyWithin(t, u, 10*time.Second)
}

// WaitReadyWithin polls u until it answers 200, for up to limit: for a
// fleet whose replicas take long to start (Node servers on a busy machine).
func WaitReadyWithin(t testing.TB, u string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	var last string
	for time.Now().Before(deadline) {
		resp, err := http.Get(u)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			last = "status " + strconv.Itoa(resp.StatusCode)
		} else {
			last = err.Error()
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s not ready after %v: %s", u, limit, last)
}

// lockedBuffer collects a process's output from its two pipes.
type lockedBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

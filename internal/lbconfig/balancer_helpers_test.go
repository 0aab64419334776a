package lbconfig

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Copied from internal/probe's balancer tests.

// findBalancer returns the path of the balancer's binary, looked up in
// PATH and /usr/sbin. If it is missing the test skips, or fails when
// MCPFLEET_REQUIRE_BALANCERS=1.
func findBalancer(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if p, err := exec.LookPath(filepath.Join("/usr/sbin", name)); err == nil {
		return p
	}
	msg := name + " not installed (Debian package " + name + ")"
	if os.Getenv("MCPFLEET_REQUIRE_BALANCERS") == "1" {
		t.Fatal(msg + ", and MCPFLEET_REQUIRE_BALANCERS=1")
	}
	t.Skip(msg + "; set MCPFLEET_REQUIRE_BALANCERS=1 to fail instead")
	return ""
}

// freeAddr returns a loopback address with a port that was free a moment
// ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startProcess runs bin in the foreground until the test ends, then stops
// it with SIGTERM (SIGKILL after five seconds). If it exits early, the test
// fails with its output.
func startProcess(t *testing.T, bin string, args ...string) {
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

// waitReady polls a URL until it answers 200, for up to ten seconds.
func waitReady(t *testing.T, u string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
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
	t.Fatalf("%s not ready after 10s: %s", u, last)
}

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Package redistest starts a real redis-server for tests, so that code meant for Valkey or Redis is
// tested against the server's own scripting, expiry and clock rather than a fake of them.
package redistest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// RequireEnv is the environment variable that turns a missing redis-server from a skip into a
// failure. CI sets it to 1 once it has installed the server (Debian package redis-server).
const RequireEnv = "MCPFLEET_REQUIRE_REDIS"

// startTimeout bounds how long Start waits for a started server to answer PING.
const startTimeout = 10 * time.Second

// Start runs a fresh redis-server on a free loopback port, with persistence off and its working
// directory in t.TempDir(), waits until it answers PING, and stops it in t.Cleanup. It returns the
// server's address as host:port. Each call starts its own server, so tests that call it do not
// share state.
//
// If redis-server is not on PATH, Start skips the test, unless RequireEnv is 1, when it fails it.
func Start(t testing.TB) (addr string) {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("redis-server not found on PATH and %s=1: install it (Debian package redis-server)", RequireEnv)
		}
		t.Skipf("redis-server not found on PATH (Debian package redis-server); set %s=1 to fail instead", RequireEnv)
	}
	dir := t.TempDir()
	// The free port is found by binding and releasing it, so another process may take it before
	// the server binds; a few attempts make that race harmless.
	var lastErr error
	for range 3 {
		addr, lastErr = start(t, bin, dir)
		if lastErr == nil {
			return addr
		}
	}
	t.Fatalf("starting redis-server: %v", lastErr)
	return ""
}

// start makes one attempt at starting a server; on failure the server is already stopped.
func start(t testing.TB, bin, dir string) (string, error) {
	t.Helper()
	port, err := freePort()
	if err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	logPath := filepath.Join(dir, "redis-"+strconv.Itoa(port)+".log")
	cmd := exec.Command(bin,
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", dir,
		"--logfile", logPath,
		"--daemonize", "no",
	)
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("running %s: %w", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		_ = cmd.Process.Kill()
		<-exited
	}

	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(startTimeout)
	for {
		if err := ping(addr); err == nil {
			break
		} else if time.Now().After(deadline) {
			stop()
			return "", fmt.Errorf("no PONG from %s within %v: %w%s", addr, startTimeout, err, logTail(logPath))
		}
		select {
		case err := <-exited:
			exited <- err // let stop's receive return
			stop()
			return "", fmt.Errorf("redis-server exited early (%v)%s", err, logTail(logPath))
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Cleanup(stop)
	return addr, nil
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ping sends one inline PING and expects +PONG.
func ping(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("answered %q", strings.TrimSpace(line))
	}
	return nil
}

// logTail returns the end of the server's log, for an error message.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return ""
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return "\nredis-server log:\n" + string(b)
}

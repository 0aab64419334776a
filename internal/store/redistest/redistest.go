// Package redistest starts a real redis-server for tests, so that code meant for Valkey or Redis is
// tested against the server's own scripting, expiry and clock rather than a fake of them.
package redistest

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/proc"
)

// RequireEnv is the environment variable that turns a missing redis-server from a skip into a
// failure. CI sets it to 1 once it has installed the server (Debian package redis-server).
const RequireEnv = "MCPFLEET_REQUIRE_REDIS"

// Start runs a fresh redis-server on a free loopback port, with persistence off and its working
// directory in t.TempDir() (proc.StartRedis), and stops it in t.Cleanup. It returns the server's
// address as host:port. Each call starts its own server, so tests that call it do not share state.
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
	r, err := proc.StartRedis(context.Background(), bin, t.TempDir())
	if err != nil {
		t.Fatalf("starting redis-server: %v", err)
	}
	t.Cleanup(r.Kill)
	return r.Addr
}

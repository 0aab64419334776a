package proc_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/proc"
	"github.com/mcpfleet/mcpfleet/internal/store/redistest"
	"github.com/mcpfleet/mcpfleet/internal/testproc"
	"github.com/redis/go-redis/v9"
)

// TestStopKillsWhatIgnoresSIGTERM: Stop waits for the process to exit on
// SIGTERM, and kills it when it will not; its output is kept.
func TestStopKillsWhatIgnoresSIGTERM(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh on PATH")
	}
	p, err := proc.Start("stubborn", sh, "-c", `trap "" TERM; echo ready; while :; do sleep 0.05; done`)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(p.Output(), "ready") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	p.Stop(200 * time.Millisecond)
	if d := time.Since(start); d < 200*time.Millisecond || d > 3*time.Second {
		t.Errorf("Stop returned after %v, want it to wait 200ms, then kill", d)
	}
	if p.Err() == nil {
		t.Error("a killed process exited with status 0")
	}
	if got := p.Output(); got != "ready\n" {
		t.Errorf("output %q, want %q", got, "ready\n")
	}
	p.Stop(time.Second) // again, on a process that has exited
}

// TestLookupNamesThePackage: a missing program's error says how to
// install it.
func TestLookupNamesThePackage(t *testing.T) {
	_, err := proc.Lookup("mcpfleet-no-such-program", "mcpfleet-no-such-package")
	if err == nil || !strings.Contains(err.Error(), "apt-get install mcpfleet-no-such-package") {
		t.Errorf("Lookup = %v, want an error naming the package", err)
	}
}

// TestStartRedisAnswersAndStops: a server of one's own answers PING until
// it is stopped.
func TestStartRedisAnswersAndStops(t *testing.T) {
	bin := testproc.FindBinary(t, "redis-server", "redis-server", redistest.RequireEnv)
	r, err := proc.StartRedis(context.Background(), bin, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: r.Addr, MaxRetries: -1})
	defer c.Close()
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("PING %s: %v", r.Addr, err)
	}
	if want := "redis://" + r.Addr + "/0"; r.URL() != want {
		t.Errorf("URL() = %q, want %q", r.URL(), want)
	}
	r.Stop(2 * time.Second)
	if err := c.Ping(context.Background()).Err(); err == nil {
		t.Errorf("%s still answers after Stop", r.Addr)
	}
}

// Package tasktest is the contract every session.TaskStore meets, run on
// the memory registry and on a real redis-server.
package tasktest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/session"
)

// Contract checks s: unknown tasks, odd IDs, re-remembering, expiry, and,
// when refusesZeroTTL, that a zero ttl is refused.
func Contract(t *testing.T, s session.TaskStore, refusesZeroTTL bool) {
	t.Helper()
	ctx := context.Background()
	if _, ok, err := s.Lookup(ctx, "nope"); ok || err != nil {
		t.Fatalf("unknown task: ok %v, err %v", ok, err)
	}
	odd := strings.Repeat("x", 300) + "\x00{}*"
	for id, rep := range map[string]string{"t1": "a", odd: "b"} {
		if err := s.Remember(ctx, id, rep, time.Minute); err != nil {
			t.Fatal(err)
		}
		if got, ok, err := s.Lookup(ctx, id); !ok || err != nil || got != rep {
			t.Fatalf("Lookup(%.8q) = %q, %v, %v; want %q", id, got, ok, err, rep)
		}
	}
	if err := s.Remember(ctx, "t1", "c", time.Minute); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := s.Lookup(ctx, "t1"); got != "c" {
		t.Fatalf("a task remembered again: %q, want the new replica c", got)
	}
	if err := s.Remember(ctx, "short", "a", 150*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if _, ok, _ := s.Lookup(ctx, "short"); ok {
		t.Fatal("a task past its ttl is still routed")
	}
	if err := s.Remember(ctx, "t2", "a", 0); err == nil && refusesZeroTTL {
		t.Fatal("a zero ttl was accepted")
	}
}

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

// Contract checks s: unknown tasks, odd IDs, openers kept apart,
// re-remembering, expiry, and, when refusesZeroTTL, that a zero ttl is
// refused.
func Contract(t *testing.T, s session.TaskStore, refusesZeroTTL bool) {
	t.Helper()
	ctx := context.Background()
	if _, ok, err := s.Lookup(ctx, "nope"); ok || err != nil {
		t.Fatalf("unknown task: ok %v, err %v", ok, err)
	}
	alice := session.OpenerOf([session.OpenerLen]byte{0, 'a', 0xff, 3, 4, 5, 6, 7})
	bob := session.OpenerOf([session.OpenerLen]byte{0, 'b', 0xff, 3, 4, 5, 6, 7})
	odd := strings.Repeat("x", 300) + "\x00{}*"
	tasks := map[string]session.Task{
		"t1":     {Replica: "a"},
		odd:      {Replica: "b:8080"},
		"alice":  {Replica: "10.0.0.1:9000", Opener: alice},
		"bob":    {Replica: "c", Opener: bob},
		"nobody": {Replica: "\x01odd name"},
	}
	for id, task := range tasks {
		if err := s.Remember(ctx, id, task, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	for id, want := range tasks {
		if got, ok, err := s.Lookup(ctx, id); !ok || err != nil || got != want {
			t.Fatalf("Lookup(%.8q) = %+v, %v, %v; want %+v", id, got, ok, err, want)
		}
	}
	if got, _, _ := s.Lookup(ctx, "alice"); got.Opener.Admits(bob) || !got.Opener.Admits(alice) {
		t.Fatal("alice's task admits bob, or not alice")
	}
	if err := s.Remember(ctx, "t1", session.Task{Replica: "c", Opener: bob}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := s.Lookup(ctx, "t1"); got != (session.Task{Replica: "c", Opener: bob}) {
		t.Fatalf("a task remembered again: %+v, want the new replica c and opener", got)
	}
	if err := s.Remember(ctx, "short", session.Task{Replica: "a"}, 150*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if _, ok, _ := s.Lookup(ctx, "short"); ok {
		t.Fatal("a task past its ttl is still routed")
	}
	if err := s.Remember(ctx, "t2", session.Task{Replica: "a"}, 0); err == nil && refusesZeroTTL {
		t.Fatal("a zero ttl was accepted")
	}
}

package session

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/store"
	"github.com/mcpfleet/mcpfleet/internal/store/redistest"
	"github.com/mcpfleet/mcpfleet/internal/testproc"
)

// testTaskStore is the contract both registries meet.
func testTaskStore(t *testing.T, s TaskStore) {
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
	if err := s.Remember(ctx, "t2", "a", 0); err == nil && isRedis(s) {
		t.Fatal("a zero ttl was accepted")
	}
}

func isRedis(s TaskStore) bool { _, ok := s.(*RedisTasks); return ok }

func TestMemoryTasksContract(t *testing.T) { testTaskStore(t, NewTasks(0)) }

func TestRedisTasksContract(t *testing.T) {
	client, err := store.NewRedisClient("redis://" + redistest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	s := NewRedisTasks(client, "test:task:")
	testTaskStore(t, s)
	keys, _ := client.Keys(context.Background(), "*").Result()
	for _, k := range keys {
		if strings.Contains(k, "t1") || strings.Contains(k, "xxx") || len(k) != len("test:task:")+64 {
			t.Errorf("key %q: want the prefix and a hex digest, never the task id", k)
		}
	}
}

func TestRedisTasksUnavailable(t *testing.T) {
	client, err := store.NewRedisClient("redis://" + testproc.FreeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	s := NewRedisTasks(client, "x:")
	if _, _, err := s.Lookup(context.Background(), "t"); err == nil {
		t.Fatal("Lookup against no server succeeded")
	}
	if err := s.Remember(context.Background(), "t", "a", time.Second); err == nil {
		t.Fatal("Remember against no server succeeded")
	}
}

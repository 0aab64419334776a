package redistasks

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/session"
	"github.com/mcpfleet/mcpfleet/internal/session/tasktest"
	"github.com/mcpfleet/mcpfleet/internal/store"
	"github.com/mcpfleet/mcpfleet/internal/store/redistest"
	"github.com/mcpfleet/mcpfleet/internal/testproc"
	"github.com/redis/go-redis/v9"
)

func TestContract(t *testing.T) {
	client, err := store.NewRedisClient("redis://" + redistest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	tasktest.Contract(t, New(client, "test:task:"), true)
	keys, _ := client.Keys(context.Background(), "*").Result()
	for _, k := range keys {
		if strings.Contains(k, "t1") || strings.Contains(k, "xxx") || len(k) != len("test:task:")+64 {
			t.Errorf("key %q: want the prefix and a hex digest, never the task id", k)
		}
	}
}

// TestClusterContract runs the contract on a real Redis Cluster.
func TestClusterContract(t *testing.T) {
	c := redistest.StartCluster(t)
	client, err := store.NewClient(store.ModeCluster, c.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	tasktest.Contract(t, New(client, "test:task:"), true)
}

// TestSentinelContract runs the contract against a primary that Redis
// Sentinel watches, then again through the same client after the
// sentinels have failed it over to its replica.
func TestSentinelContract(t *testing.T) {
	redistest.OnSentinel(t, store.NewClient, func(t *testing.T, client redis.UniversalClient) {
		tasktest.Contract(t, New(client, "test:task:"+t.Name()+":"), true)
	})
}

func TestUnavailable(t *testing.T) {
	client, err := store.NewRedisClient("redis://" + testproc.FreeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	s := New(client, "x:")
	if _, _, err := s.Lookup(context.Background(), "t"); err == nil {
		t.Fatal("Lookup against no server succeeded")
	}
	if err := s.Remember(context.Background(), "t", session.Task{Replica: "a"}, time.Second); err == nil {
		t.Fatal("Remember against no server succeeded")
	}
}

// TestRecordsOfEarlierGateways: a record written before openers were kept
// (the replica's name alone) is a task nobody opened; one a caller opened
// shows no opener digest in the clear beside the name, and no record of a
// kind this store never writes passes for a task.
func TestRecordsOfEarlierGateways(t *testing.T) {
	client, err := store.NewRedisClient("redis://" + redistest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()
	s := New(client, "old:")
	if err := client.Set(ctx, s.key("t"), "replica-a", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := s.Lookup(ctx, "t"); !ok || err != nil || got != (session.Task{Replica: "replica-a"}) {
		t.Fatalf("an earlier record: %+v, %v, %v", got, ok, err)
	}
	if err := client.Set(ctx, s.key("cut"), "\x00abc", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.Lookup(ctx, "cut"); ok || err == nil {
		t.Fatalf("a cut record: ok %v, err %v; want an error", ok, err)
	}
	if err := s.Remember(ctx, "n", session.Task{Replica: "\x00a"}, time.Minute); err == nil {
		t.Fatal("a replica name that reads as a record's mark was stored")
	}
}

package redisstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/limit"
	"github.com/mcpfleet/mcpfleet/internal/limit/limittest"
	"github.com/mcpfleet/mcpfleet/internal/store"
	"github.com/mcpfleet/mcpfleet/internal/store/redistest"
	"github.com/mcpfleet/mcpfleet/internal/testproc"
	"github.com/redis/go-redis/v9"
)

func TestRedisContract(t *testing.T) {
	addr := redistest.Start(t)
	limittest.Run(t, func(t *testing.T) limittest.Harness {
		return limittest.Harness{Store: newRedisStore(t, addr, "test:"+t.Name()+":"), Advance: time.Sleep}
	})
}

// TestClusterContract runs the contract on a real Redis Cluster of three
// primaries: every script keeps to one slot (the cluster refuses one that
// does not with CROSSSLOT), a tool cap and its callers included.
func TestClusterContract(t *testing.T) {
	c := redistest.StartCluster(t)
	client, err := store.NewClient(store.ModeCluster, c.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	limittest.Run(t, func(t *testing.T) limittest.Harness {
		return limittest.Harness{Store: New(client, "test:"+t.Name()+":"), Advance: time.Sleep}
	})
}

// TestSentinelContract runs the contract against a primary that Redis
// Sentinel watches, then again through the same client after the
// sentinels have failed it over to its replica.
func TestSentinelContract(t *testing.T) {
	redistest.OnSentinel(t, store.NewClient, func(t *testing.T, client redis.UniversalClient) {
		limittest.Run(t, func(t *testing.T) limittest.Harness {
			return limittest.Harness{Store: New(client, "test:"+t.Name()+":"), Advance: time.Sleep}
		})
	})
}

func newRedisStore(t testing.TB, addr, prefix string) *Redis {
	t.Helper()
	client, err := store.NewRedisClient("redis://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return New(client, prefix)
}

func TestRedisUnavailable(t *testing.T) {
	s := newRedisStore(t, testproc.FreeAddr(t), "x:")
	_, _, err := s.Acquire(context.Background(), "a", "", limit.Check{Rate: 1, Burst: 1})
	if !errors.Is(err, limit.ErrUnavailable) {
		t.Fatalf("Acquire against no server: %v, want limit.ErrUnavailable", err)
	}
	if err := s.Release(context.Background(), limit.Lease{Caller: "a", ID: "x"}); !errors.Is(err, limit.ErrUnavailable) {
		t.Fatalf("Release against no server: %v, want limit.ErrUnavailable", err)
	}
	if err := s.Renew(context.Background(), []limit.Lease{{Caller: "a", ID: "x"}}, limit.Check{LeaseTTL: time.Second}); !errors.Is(err, limit.ErrUnavailable) {
		t.Fatalf("Renew against no server: %v, want limit.ErrUnavailable", err)
	}
}

func TestRedisKeyLayout(t *testing.T) {
	addr := redistest.Start(t)
	s := newRedisStore(t, addr, "p:")
	ctx := context.Background()
	c := limit.Check{Rate: 2, Burst: 4, Concurrency: 2, ToolCap: 2, LeaseTTL: 3 * time.Second}
	if _, _, err := s.Acquire(ctx, "0123abcd", "work", c); err != nil {
		t.Fatal(err)
	}
	keys, err := s.client.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"p:{c:0123abcd}:b": true, "p:{c:0123abcd}:l": true, "p:{t:work}:l": true}
	if len(keys) != len(want) {
		t.Fatalf("keys %q, want %v", keys, want)
	}
	for _, k := range keys {
		if !want[k] {
			t.Fatalf("unexpected key %q", k)
		}
		ttl, err := s.client.PTTL(ctx, k).Result()
		if err != nil || ttl <= 0 || ttl > 5*time.Second {
			t.Fatalf("key %q expires in %v (%v), want within 5s", k, ttl, err)
		}
	}
}

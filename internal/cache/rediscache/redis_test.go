package rediscache

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/cache"
	"github.com/mcpfleet/mcpfleet/internal/cache/cachetest"
	"github.com/mcpfleet/mcpfleet/internal/store"
	"github.com/mcpfleet/mcpfleet/internal/store/redistest"
	"github.com/mcpfleet/mcpfleet/internal/testproc"
	"github.com/redis/go-redis/v9"
)

func newStore(t testing.TB, addr, prefix string) *Redis {
	t.Helper()
	client, err := store.NewRedisClient("redis://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return New(client, prefix, 4096, time.Hour)
}

func TestRedisContract(t *testing.T) {
	addr := redistest.Start(t)
	cachetest.Run(t, func(t *testing.T) cachetest.Harness {
		return cachetest.Harness{Store: newStore(t, addr, "test:"+t.Name()+":"), Advance: time.Sleep, MaxEntry: 4096}
	})
}

// TestClusterContract runs the contract on a real Redis Cluster: a
// generation and its entries in one slot.
func TestClusterContract(t *testing.T) {
	c := redistest.StartCluster(t)
	client, err := store.NewClient(store.ModeCluster, c.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	cachetest.Run(t, func(t *testing.T) cachetest.Harness {
		return cachetest.Harness{Store: New(client, "test:"+t.Name()+":", 4096, time.Hour), Advance: time.Sleep, MaxEntry: 4096}
	})
}

// TestSentinelContract runs the contract against a primary that Redis
// Sentinel watches, then again through the same client after the
// sentinels have failed it over to its replica.
func TestSentinelContract(t *testing.T) {
	redistest.OnSentinel(t, store.NewClient, func(t *testing.T, client redis.UniversalClient) {
		cachetest.Run(t, func(t *testing.T) cachetest.Harness {
			return cachetest.Harness{Store: New(client, "test:"+t.Name()+":", 4096, time.Hour), Advance: time.Sleep, MaxEntry: 4096}
		})
	})
}

func TestRedisKeysAndLives(t *testing.T) {
	s := newStore(t, redistest.Start(t), "p:")
	ctx := context.Background()
	l, _ := cache.Plan(cache.Request{Method: "resources/read", Version: "2026-07-28",
		Params: []byte(`{"uri":"file:///secret/alice.txt"}`), Caller: "c0ffee"}, cache.Rules{MaxTTL: time.Hour})
	if err := s.Invalidate(ctx, l.Gen); err != nil {
		t.Fatal(err)
	}
	h, _ := s.Get(ctx, l.Gen, l.Keys()...)
	if err := s.Set(ctx, l.Gen, h.Gen, l.Private, []byte(`{"contents":[]}`), 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	keys, _ := s.client.Keys(ctx, "*").Result()
	if len(keys) != 2 {
		t.Fatalf("keys %q, want a generation and an entry", keys)
	}
	tag := "p:{" + l.Gen + "}:"
	for _, k := range keys {
		if !strings.HasPrefix(k, tag) {
			t.Errorf("key %q is not under the generation's hash tag %s: a cluster would put it in another slot", k, tag)
		}
	}
	for _, k := range keys {
		if strings.Contains(k, "alice") || strings.Contains(k, "secret") || strings.Contains(k, "c0ffee") {
			t.Errorf("key %q names what it is for", k)
		}
		ttl, _ := s.client.PTTL(ctx, k).Result()
		if ttl <= 0 {
			t.Errorf("key %q never expires", k)
		}
		if strings.HasSuffix(k, "}:g") && ttl < time.Hour {
			t.Errorf("the generation expires in %v, before an entry could (max ttl 1h)", ttl)
		}
	}
}

func TestRedisUnavailable(t *testing.T) {
	s := newStore(t, testproc.FreeAddr(t), "x:")
	if _, err := s.Get(context.Background(), "g", "k"); !errors.Is(err, cache.ErrUnavailable) {
		t.Fatalf("Get against no server: %v", err)
	}
	if err := s.Set(context.Background(), "g", 0, "k", []byte("v"), time.Second); !errors.Is(err, cache.ErrUnavailable) {
		t.Fatalf("Set against no server: %v", err)
	}
}

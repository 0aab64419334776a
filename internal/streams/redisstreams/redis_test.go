package redisstreams_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/store"
	"github.com/mcpfleet/mcpfleet/internal/store/redistest"
	"github.com/mcpfleet/mcpfleet/internal/streams"
	"github.com/mcpfleet/mcpfleet/internal/streams/redisstreams"
	"github.com/mcpfleet/mcpfleet/internal/streams/streamtest"
	"github.com/redis/go-redis/v9"
)

// serverClient starts a redis-server and returns a client for it, closed
// when the test ends.
func serverClient(t *testing.T) redis.UniversalClient {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: redistest.Start(t)})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestRedisContract runs the contract against a real redis-server. The
// contract has no memory-only case (MaxTotalBytes and the fake clock are
// tested in the streams package, on Memory only: a Redis server has its
// own maxmemory and clock).
func TestRedisContract(t *testing.T) {
	client := serverClient(t) // one server; each subtest gets its own prefix
	streamtest.Run(t, func(t *testing.T) streamtest.Harness {
		o := streams.Options{TTL: 300 * time.Millisecond, MaxStreamBytes: 400}
		b := redisstreams.New(client, "test:"+t.Name()+":", o)
		return streamtest.Harness{Buffer: b, MaxStreamBytes: 400, TTL: o.TTL}
	})
}

// TestRedisKeyLayout: the two keys of a stream, their expiry, and a stream
// handed over with its oldest events already dropped.
// TestClusterContract runs the contract on a real Redis Cluster: a stream
// and its metadata share one hash tag.
func TestClusterContract(t *testing.T) {
	c := redistest.StartCluster(t)
	client, err := store.NewClient(store.ModeCluster, c.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	streamtest.Run(t, func(t *testing.T) streamtest.Harness {
		o := streams.Options{TTL: 300 * time.Millisecond, MaxStreamBytes: 400}
		return streamtest.Harness{Buffer: redisstreams.New(client, "test:"+t.Name()+":", o), MaxStreamBytes: 400, TTL: o.TTL}
	})
}

// TestSentinelContract runs the contract against a primary that Redis
// Sentinel watches, then again through the same client after the
// sentinels have failed it over to its replica.
func TestSentinelContract(t *testing.T) {
	redistest.OnSentinel(t, store.NewClient, func(t *testing.T, client redis.UniversalClient) {
		streamtest.Run(t, func(t *testing.T) streamtest.Harness {
			o := streams.Options{TTL: 300 * time.Millisecond, MaxStreamBytes: 400}
			return streamtest.Harness{Buffer: redisstreams.New(client, "test:"+t.Name()+":", o), MaxStreamBytes: 400, TTL: o.TTL}
		})
	})
}

func TestRedisKeyLayout(t *testing.T) {
	ctx := context.Background()
	client := serverClient(t)
	b := redisstreams.New(client, "mcpfleet:stream:", streams.Options{TTL: 10 * time.Second})
	if err := b.Append(ctx, "ab", streams.Event{Pos: 3, Data: []byte("data: 3\n\n")}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"mcpfleet:stream:{ab}", "mcpfleet:stream:{ab}:m"} {
		if ttl := client.PTTL(ctx, k).Val(); ttl <= 9*time.Second || ttl > 10*time.Second {
			t.Errorf("%s PTTL = %v, want the 10s TTL", k, ttl)
		}
	}
	if n := client.XLen(ctx, "mcpfleet:stream:{ab}").Val(); n != 1 {
		t.Errorf("XLEN = %d, want 1", n)
	}
	if _, err := b.Replay(ctx, "ab", 0); err != streams.ErrGone {
		t.Errorf("Replay from before the first kept event: %v, want ErrGone", err)
	}
	c, err := b.Replay(ctx, "ab", 2)
	if err != nil {
		t.Fatal(err)
	}
	if ev, err := c.Next(ctx); err != nil || ev.Pos != 3 || string(ev.Data) != "data: 3\n\n" {
		t.Errorf("Next = %+v, %v", ev, err)
	}
}

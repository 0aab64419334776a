package redistest

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// ping sends one PING to addr.
func ping(addr string) error {
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 500 * time.Millisecond, MaxRetries: -1})
	defer c.Close()
	return c.Ping(context.Background()).Err()
}

func TestStartAnswersAndStops(t *testing.T) {
	var addr string
	t.Run("server", func(t *testing.T) {
		addr = Start(t)
		if err := ping(addr); err != nil {
			t.Fatalf("PING %s: %v", addr, err)
		}
		if other := Start(t); other == addr {
			t.Errorf("two servers share %s", addr)
		}
	})
	if addr == "" {
		t.Skip("no server was started")
	}
	if err := ping(addr); err == nil {
		t.Errorf("%s still answers after its test ended", addr)
	}
}

func TestStartClusterServesEverySlot(t *testing.T) {
	c := StartCluster(t)
	if len(c.Nodes) != 6 {
		t.Fatalf("%d nodes, want 6", len(c.Nodes))
	}
	cl := c.Client(t)
	ctx := context.Background()
	// Keys of different slots land on different primaries; a script over
	// two slots is refused, as the stores must never need.
	for i := range 50 {
		if err := cl.Set(ctx, "k"+string(rune('a'+i%26))+string(rune('a'+i/26)), "v", time.Minute).Err(); err != nil {
			t.Fatalf("SET on the cluster: %v", err)
		}
	}
	err := cl.Eval(ctx, "return redis.call('MSET', KEYS[1], 1, KEYS[2], 2)", []string{"{a}x", "{b}y"}).Err()
	if err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Fatalf("a script over two slots: %v, want CROSSSLOT", err)
	}
	var masters atomic.Int32
	cl.ForEachMaster(ctx, func(context.Context, *redis.Client) error { masters.Add(1); return nil })
	if masters := masters.Load(); masters != 3 {
		t.Fatalf("%d primaries, want 3", masters)
	}
}

func TestStartSentinelFailsOver(t *testing.T) {
	s := StartSentinel(t)
	ctx := context.Background()
	before, err := s.Primary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Failover(ctx); err != nil {
		t.Fatal(err)
	}
	after, err := s.Primary(ctx)
	if err != nil || after == before {
		t.Fatalf("primary %s before, %s after (%v): want another", before, after, err)
	}
}

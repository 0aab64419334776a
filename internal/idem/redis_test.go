package idem

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/store"
	"github.com/mcpfleet/mcpfleet/internal/store/redistest"
	"github.com/redis/go-redis/v9"
)

// newRedisClient returns a client for addr, closed when the test ends.
func newRedisClient(t testing.TB, addr string) redis.UniversalClient {
	t.Helper()
	client, err := store.NewRedisClient("redis://" + addr)
	if err != nil {
		t.Fatalf("NewRedisClient: %v", err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

func TestRedisContract(t *testing.T) {
	addr := redistest.Start(t) // one server; each subtest gets its own prefix
	testStore(t, func(t *testing.T) harness {
		return harness{
			store:   NewRedis(newRedisClient(t, addr), "test:"+t.Name()+":", nil),
			advance: time.Sleep, // expiry is by the server's clock
			// A second: the steps that must come before it runs out get
			// most of it on a loaded machine.
			short:     time.Second,
			maxResult: DefaultMaxResult,
		}
	})
}

// TestClusterContract runs the contract on a real Redis Cluster: a record
// is one key, so one slot.
func TestClusterContract(t *testing.T) {
	c := redistest.StartCluster(t)
	client, err := store.NewClient(store.ModeCluster, c.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	testStore(t, func(t *testing.T) harness {
		return harness{store: NewRedis(client, "test:"+t.Name()+":", nil), advance: time.Sleep, short: time.Second, maxResult: DefaultMaxResult}
	})
}

// TestSentinelContract runs the contract against a primary that Redis
// Sentinel watches, then again through the same client after the
// sentinels have failed it over to its replica.
func TestSentinelContract(t *testing.T) {
	redistest.OnSentinel(t, store.NewClient, func(t *testing.T, client redis.UniversalClient) {
		testStore(t, func(t *testing.T) harness {
			return harness{store: NewRedis(client, "test:"+t.Name()+":", nil), advance: time.Sleep, short: time.Second, maxResult: DefaultMaxResult}
		})
	})
}

func TestRedisKeyLayout(t *testing.T) {
	ctx := context.Background()
	client := newRedisClient(t, redistest.Start(t))
	s := NewRedis(client, "mcpfleet:idem:", nil)
	out := claim(t, s, "k", 10*time.Second, Claimed)
	if got, err := client.Get(ctx, "mcpfleet:idem:k").Result(); err != nil || got != "r0"+dg+"\x00"+out.Token {
		t.Errorf("running record = %q, %v; want r0, the digest, NUL, the token", got, err)
	}
	if ttl := client.PTTL(ctx, "mcpfleet:idem:k").Val(); ttl <= 9*time.Second || ttl > 10*time.Second {
		t.Errorf("running record PTTL = %v, want the 10s lease", ttl)
	}
	if err := s.Complete(ctx, "k", out.Token, []byte("result"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if got, err := client.Get(ctx, "mcpfleet:idem:k").Result(); err != nil || got != "d0"+dg+"\x00result" {
		t.Errorf("done record = %q, %v; want d0, the digest, NUL, the result", got, err)
	}
	if ttl := client.PTTL(ctx, "mcpfleet:idem:k").Val(); ttl <= 59*time.Minute || ttl > time.Hour {
		t.Errorf("done record PTTL = %v, want the 1h ttl", ttl)
	}
}

// TestRedisRecordWithoutDigest: a record written before records kept a
// digest is another request's to every request: never answered from, its
// running claim never taken, its done one replaced only when asked.
func TestRedisRecordWithoutDigest(t *testing.T) {
	ctx := context.Background()
	client := newRedisClient(t, redistest.Start(t))
	s := NewRedis(client, "p:", nil)
	for _, old := range []string{"Dold result", "Rold-token"} {
		if err := client.Set(ctx, "p:k", old, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		claimAs(t, s, "k", dg, Refuse, Outcome{State: Mismatch, Reused: true, FirstReuse: true})
		got, err := s.Wait(ctx, "k", dg)
		checkOutcome(t, "Wait on "+old, got, Outcome{State: Released}, err)
		if old[0] == 'R' {
			claimAs(t, s, "k", dg, Replace, Outcome{State: Mismatch, Reused: true, FirstReuse: true})
			continue
		}
		out := claimAs(t, s, "k", dg, Replace, Outcome{State: Claimed, Reused: true, FirstReuse: true})
		if err := s.Complete(ctx, "k", out.Token, []byte("new"), time.Minute); err != nil {
			t.Fatal(err)
		}
		claimAs(t, s, "k", dg, Refuse, Outcome{State: Done, Result: []byte("new")})
	}
}

func TestRedisPrefixesIsolated(t *testing.T) {
	client := newRedisClient(t, redistest.Start(t))
	a, b := NewRedis(client, "a:", nil), NewRedis(client, "b:", nil)
	claim(t, a, "k", time.Minute, Claimed)
	claim(t, b, "k", time.Minute, Claimed)
}

func TestRedisForeignValueIsUnavailable(t *testing.T) {
	ctx := context.Background()
	client := newRedisClient(t, redistest.Start(t))
	if err := client.Set(ctx, "p:k", "something else", 0).Err(); err != nil {
		t.Fatal(err)
	}
	s := NewRedis(client, "p:", nil)
	if _, err := s.Claim(ctx, "k", dg, time.Second, Refuse); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Claim over a foreign value = %v, want ErrUnavailable", err)
	}
	if _, err := s.Wait(ctx, "k", dg); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Wait on a foreign value = %v, want ErrUnavailable", err)
	}
}

// TestRedisDownIsUnavailable checks the fail-open signal: every method reports ErrUnavailable,
// promptly, when nothing listens at the server's address.
func TestRedisDownIsUnavailable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	s := NewRedis(newRedisClient(t, addr), "p:", nil)
	ctx := context.Background()

	start := time.Now()
	_, claimErr := s.Claim(ctx, "k", dg, time.Second, Refuse)
	_, waitErr := s.Wait(ctx, "k", dg)
	errs := map[string]error{
		"Claim":    claimErr,
		"Complete": s.Complete(ctx, "k", "token", []byte("r"), time.Second),
		"Release":  s.Release(ctx, "k", "token"),
		"Wait":     waitErr,
	}
	for name, err := range errs {
		if !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s = %v, want ErrUnavailable", name, err)
		} else if !strings.Contains(err.Error(), "refused") {
			t.Errorf("%s = %v, want the cause (connection refused) in the message", name, err)
		}
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("four calls against a closed port took %v", took)
	}
}

func TestRedisCancelledIsNotUnavailable(t *testing.T) {
	client := newRedisClient(t, redistest.Start(t))
	s := NewRedis(client, "p:", nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Claim(ctx, "k", dg, time.Second, Refuse)
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrUnavailable) {
		t.Errorf("Claim with a cancelled ctx = %v, want context.Canceled only", err)
	}
}

func TestRedisOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		opts *RedisOptions
		ok   bool
	}{
		{"nil", nil, true},
		{"zero", &RedisOptions{}, true},
		{"negative", &RedisOptions{PollMin: -1}, false},
		{"max below min", &RedisOptions{PollMin: time.Second, PollMax: time.Millisecond}, false},
		{"min only", &RedisOptions{PollMin: time.Second}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.opts.Validate(); (err == nil) != tt.ok {
				t.Errorf("Validate = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

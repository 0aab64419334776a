package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/proc"
	"github.com/redis/go-redis/v9"
)

// SentinelMaster is the name the sentinels of StartSentinel watch the
// primary under.
const SentinelMaster = "mymaster"

// Sentinel is a primary with one replica and three sentinels watching
// them, on loopback.
type Sentinel struct {
	// Servers are the primary and its replica, in the order started.
	Servers []*proc.Redis
	// Sentinels are the three sentinels.
	Sentinels []*proc.Redis
	// URL names the sentinels in go-redis's failover form.
	URL string
}

// StartSentinel runs a primary, a replica of it and three sentinels (a
// quorum of two, the primary judged down after one second), returning
// once the sentinels know the replica; it stops them in t.Cleanup. It
// skips (or fails, with RequireEnv=1) without redis-server.
func StartSentinel(t testing.TB) *Sentinel {
	t.Helper()
	bin := lookup(t, "redis-server")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := &Sentinel{}
	primary, err := proc.StartRedis(ctx, bin, t.TempDir())
	if err != nil {
		t.Fatalf("starting the primary: %v", err)
	}
	t.Cleanup(primary.Kill)
	host, port, _ := net.SplitHostPort(primary.Addr)
	replica, err := proc.StartRedis(ctx, bin, t.TempDir(), "--replicaof", host, port)
	if err != nil {
		t.Fatalf("starting the replica: %v", err)
	}
	t.Cleanup(replica.Kill)
	s.Servers = []*proc.Redis{primary, replica}
	var addrs []string
	for i := range 3 {
		r, err := startSentinel(ctx, bin, t.TempDir(), primary.Addr)
		if err != nil {
			t.Fatalf("starting sentinel %d: %v", i, err)
		}
		t.Cleanup(r.Kill)
		s.Sentinels = append(s.Sentinels, r)
		addrs = append(addrs, r.Addr)
	}
	s.URL = "redis://" + addrs[0] + "?addr=" + strings.Join(addrs[1:], "&addr=")
	if err := s.waitReplicas(ctx, 1); err != nil {
		t.Fatal(err)
	}
	return s
}

// startSentinel runs one sentinel watching primary, its config file (which
// a sentinel rewrites) in dir.
func startSentinel(ctx context.Context, bin, dir, primary string) (*proc.Redis, error) {
	var last error
	for range 3 {
		addr, err := proc.FreeAddr()
		if err != nil {
			return nil, err
		}
		_, port, _ := net.SplitHostPort(addr)
		host, pport, _ := net.SplitHostPort(primary)
		conf := filepath.Join(dir, "sentinel.conf")
		text := fmt.Sprintf("bind 127.0.0.1\nport %s\ndir %s\nsentinel monitor %s %s %s 2\nsentinel down-after-milliseconds %[3]s 1000\nsentinel failover-timeout %[3]s 5000\nsentinel parallel-syncs %[3]s 1\n",
			port, dir, SentinelMaster, host, pport)
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			return nil, err
		}
		p, err := proc.Start("redis-sentinel", bin, conf, "--sentinel")
		if err != nil {
			return nil, err
		}
		r := &proc.Redis{Process: p, Addr: addr}
		if last = waitPing(ctx, r); last == nil {
			return r, nil
		}
		p.Kill()
	}
	return nil, last
}

// waitPing waits up to ten seconds for r to answer PING.
func waitPing(ctx context.Context, r *proc.Redis) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c := redis.NewClient(&redis.Options{Addr: r.Addr, DialTimeout: 500 * time.Millisecond, MaxRetries: -1})
	defer c.Close()
	for {
		err := c.Ping(ctx).Err()
		if err == nil {
			return nil
		}
		select {
		case <-r.Exited():
			return fmt.Errorf("%s exited at start (%v):\n%s", r.Name, r.Err(), proc.LastLines(r.Output(), 20))
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s on %s: %w", r.Name, r.Addr, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitReplicas waits until the first sentinel knows n replicas of the
// master, up and synced enough to be promoted.
func (s *Sentinel) waitReplicas(ctx context.Context, n int) error {
	c := redis.NewSentinelClient(&redis.Options{Addr: s.Sentinels[0].Addr, DialTimeout: 500 * time.Millisecond})
	defer c.Close()
	for {
		rs, err := c.Replicas(ctx, SentinelMaster).Result()
		up := 0
		for _, r := range rs {
			if !strings.Contains(r["flags"], "down") && !strings.Contains(r["flags"], "disconnected") {
				up++
			}
		}
		if err == nil && up >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the sentinels to know %d replica(s): %v (%v)", n, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Primary returns the primary's address as the first sentinel sees it.
func (s *Sentinel) Primary(ctx context.Context) (string, error) {
	c := redis.NewSentinelClient(&redis.Options{Addr: s.Sentinels[0].Addr, DialTimeout: 500 * time.Millisecond})
	defer c.Close()
	a, err := c.GetMasterAddrByName(ctx, SentinelMaster).Result()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort(a[0], a[1]), nil
}

// Failover asks the sentinels to promote the replica (SENTINEL FAILOVER)
// and waits until they name another primary, that primary is one, and the
// old one has become its replica, up to 30 s.
func (s *Sentinel) Failover(ctx context.Context) error {
	before, err := s.Primary(ctx)
	if err != nil {
		return err
	}
	c := redis.NewSentinelClient(&redis.Options{Addr: s.Sentinels[0].Addr, DialTimeout: 500 * time.Millisecond})
	defer c.Close()
	if err := c.Failover(ctx, SentinelMaster).Err(); err != nil {
		return fmt.Errorf("SENTINEL FAILOVER: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		now, err := s.Primary(ctx)
		// Done once the new primary has left replica mode and the old one
		// has become its replica: until then both may take writes.
		if err == nil && now != before && roleOf(ctx, now) == "master" && roleOf(ctx, before) == "slave" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the failover from %s: %w", before, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// roleOf is the ROLE of the server at addr: master, slave or "" when it
// does not answer.
func roleOf(ctx context.Context, addr string) string {
	rc := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 500 * time.Millisecond, MaxRetries: -1})
	defer rc.Close()
	role, err := rc.Do(ctx, "ROLE").Slice()
	if err != nil || len(role) == 0 {
		return ""
	}
	r, _ := role[0].(string)
	return r
}

// WaitPrimary waits up to 10 s until client's commands reach a primary
// (ROLE answers master three times in a row): a client that has not yet
// heard of a failover still writes to the old one.
func WaitPrimary(ctx context.Context, client redis.UniversalClient) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for ok := 0; ok < 3; {
		role, err := client.Do(ctx, "ROLE").Slice()
		if err == nil && len(role) > 0 && role[0] == "master" {
			ok++
			continue
		}
		ok = 0
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the client to reach the new primary: %w (%v)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// NewClient is store.NewClient, passed in: redistest cannot import package
// store, whose own tests import redistest.
type NewClient func(mode, url, master string) (redis.UniversalClient, error)

// OnSentinel runs run against a primary that Redis Sentinel watches, then
// again through the same client after the sentinels have failed it over
// to its replica and the client has followed.
func OnSentinel(t *testing.T, newClient NewClient, run func(t *testing.T, client redis.UniversalClient)) {
	t.Helper()
	s := StartSentinel(t)
	client, err := newClient("sentinel", s.URL, SentinelMaster)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	t.Run("before failover", func(t *testing.T) { run(t, client) })
	if err := s.Failover(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := WaitPrimary(context.Background(), client); err != nil {
		t.Fatal(err)
	}
	t.Run("after failover", func(t *testing.T) { run(t, client) })
}

package redistest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/proc"
	"github.com/redis/go-redis/v9"
)

// Cluster is a real Redis Cluster on loopback: three primaries, each with
// one replica, made by redis-cli --cluster create.
type Cluster struct {
	// Nodes are the six servers, primaries first as redis-cli assigned
	// them at creation (a failover may change that later).
	Nodes []*proc.Redis
	// URL names the seed nodes in go-redis's cluster form:
	// redis://first?addr=second&addr=third...
	URL string
}

// ClusterNodeTimeout is how long the cluster's nodes wait on one that does
// not answer before they fail it over: short, so that a test of a failover
// takes seconds.
const ClusterNodeTimeout = time.Second

// StartCluster runs six cluster-enabled redis-servers and joins them into
// one cluster, returning once every node says the cluster is ok and every
// slot is served; it stops them in t.Cleanup. It skips (or fails, with
// RequireEnv=1) without redis-server and redis-cli.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	bin := lookup(t, "redis-server")
	cli := lookup(t, "redis-cli")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := &Cluster{}
	var addrs []string
	for i := range 6 {
		dir := filepath.Join(t.TempDir(), fmt.Sprint(i))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		// No delay before a replica's first sync (5 s by default): a
		// replica that has never synced is no candidate for a failover.
		r, err := proc.StartRedis(ctx, bin, dir, "--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf", "--cluster-node-timeout", fmt.Sprint(ClusterNodeTimeout.Milliseconds()),
			"--repl-diskless-sync-delay", "0")
		if err != nil {
			t.Fatalf("starting cluster node %d: %v", i, err)
		}
		t.Cleanup(r.Kill)
		c.Nodes = append(c.Nodes, r)
		addrs = append(addrs, r.Addr)
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	c.URL = "redis://" + addrs[0] + "?addr=" + strings.Join(addrs[1:], "&addr=")
	if err := c.WaitOK(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

// WaitOK waits until every running node says cluster_state:ok with all
// 16384 slots served, every replica has synced with its primary, and a
// cluster client can write keys of several slots.
func (c *Cluster) WaitOK(ctx context.Context) error {
	for {
		err := c.ok(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the cluster: %w (%w)\n%s", ctx.Err(), err, c.nodesView())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (c *Cluster) ok(ctx context.Context) error {
	for _, n := range c.Nodes {
		select {
		case <-n.Exited():
			continue
		default:
		}
		cl := redis.NewClient(&redis.Options{Addr: n.Addr, DialTimeout: 500 * time.Millisecond, MaxRetries: -1})
		info, err := cl.ClusterInfo(ctx).Result()
		var repl string
		if err == nil {
			repl, err = cl.Info(ctx, "replication").Result()
		}
		cl.Close()
		if err != nil {
			return err
		}
		if !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_slots_ok:16384") {
			return fmt.Errorf("node %s: not ok yet", n.Addr)
		}
		// A replica must have synced with its primary, or it could not
		// take over from it.
		if strings.Contains(repl, "role:slave") && !strings.Contains(repl, "master_link_status:up") {
			return fmt.Errorf("replica %s: not synced with its primary yet", n.Addr)
		}
	}
	cl := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.addrs(), DialTimeout: 500 * time.Millisecond})
	defer cl.Close()
	// A key in each primary's slots: a write routed by the client's view.
	for _, k := range []string{"{a}", "{b}", "{c}", "{d}", "{e}", "{f}"} {
		if err := cl.Set(ctx, "redistest:probe:"+k, "1", time.Second).Err(); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) addrs() []string {
	var out []string
	for _, n := range c.Nodes {
		out = append(out, n.Addr)
	}
	return out
}

// Client returns a cluster client of its own for the test, closed in
// t.Cleanup.
func (c *Cluster) Client(t testing.TB) *redis.ClusterClient {
	t.Helper()
	cl := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.addrs(), DialTimeout: 500 * time.Millisecond})
	t.Cleanup(func() { cl.Close() })
	return cl
}

// lookup finds a program of Debian's redis-server and redis-tools packages,
// or skips (fails, with RequireEnv=1).
func lookup(t testing.TB, name string) string {
	t.Helper()
	bin, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("%s not found on PATH and %s=1: install it (Debian packages redis-server, redis-tools)", name, RequireEnv)
		}
		t.Skipf("%s not found on PATH (Debian packages redis-server, redis-tools); set %s=1 to fail instead", name, RequireEnv)
	}
	return bin
}

// nodesView is CLUSTER NODES as the first running node sees it, for a
// failure message.
func (c *Cluster) nodesView() string {
	for _, n := range c.Nodes {
		select {
		case <-n.Exited():
			continue
		default:
		}
		cl := redis.NewClient(&redis.Options{Addr: n.Addr, DialTimeout: 500 * time.Millisecond, MaxRetries: -1})
		v, err := cl.ClusterNodes(context.Background()).Result()
		cl.Close()
		if err == nil {
			out := "CLUSTER NODES at " + n.Addr + ":\n" + v
			for _, m := range c.Nodes {
				out += "\nlog of " + m.Addr + ":\n" + proc.LastLines(m.Output(), 12)
			}
			return out
		}
	}
	return "no node answers CLUSTER NODES"
}

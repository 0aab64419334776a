package proc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a redis-server of one's own: on a free loopback port, nothing
// saved to disk, its memory bounded.
type Redis struct {
	*Process
	// Addr is the server's host:port.
	Addr string
}

// redisMaxMemory bounds the server's memory: a run's records are a few
// hundred keys, and a runaway one should fail writes, not fill the
// machine.
const redisMaxMemory = "256mb"

// StartRedis runs bin (a redis-server) with its working directory in dir, and returns once it answers PING, within ctx. A port another
// process takes first costs one more attempt, up to three. extra are more of the server's options, after the defaults.
func StartRedis(ctx context.Context, bin, dir string, extra ...string) (*Redis, error) {
	var err error
	for range 3 {
		var r *Redis
		if r, err = startRedis(ctx, bin, dir, extra); err == nil {
			return r, nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, err
}

// startRedis makes one attempt; on failure the server is stopped.
func startRedis(ctx context.Context, bin, dir string, extra []string) (*Redis, error) {
	addr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	if clusterBus(extra) {
		// A cluster node listens on its port + 10000 too (the cluster bus):
		// both must be free.
		if addr, err = freeClusterAddr(); err != nil {
			return nil, err
		}
	}
	_, port, _ := net.SplitHostPort(addr) // FreeAddr's own spelling
	args := append([]string{
		"--bind", "127.0.0.1", "--port", port,
		"--save", "", "--appendonly", "no",
		"--maxmemory", redisMaxMemory,
		"--dir", dir, "--logfile", "", // the log to stdout: Output keeps it
		"--daemonize", "no"}, extra...)
	p, err := Start("redis-server", bin, args...)
	if err != nil {
		return nil, err
	}
	r := &Redis{Process: p, Addr: addr}
	if err := r.waitPong(ctx); err != nil {
		p.Kill()
		return nil, err
	}
	return r, nil
}

// waitPong polls the server with PING for up to ten seconds.
func (r *Redis) waitPong(ctx context.Context) error {
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
			return fmt.Errorf("redis-server exited at start (%v):\n%s", r.Err(), LastLines(r.Output(), 20))
		case <-ctx.Done():
			return fmt.Errorf("waiting for redis-server on %s to answer PING: %w", r.Addr, errors.Join(err, ctx.Err()))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// URL is the server's redis:// URL, database 0.
func (r *Redis) URL() string { return "redis://" + r.Addr + "/0" }

// clusterBus says whether extra turns cluster mode on.
func clusterBus(extra []string) bool {
	for i := 0; i+1 < len(extra); i++ {
		if extra[i] == "--cluster-enabled" && extra[i+1] == "yes" {
			return true
		}
	}
	return false
}

// freeClusterAddr returns a loopback address whose port and port + 10000
// were both free a moment ago (FreeAddr's draw).
func freeClusterAddr() (string, error) { return freeAddr(10000) }

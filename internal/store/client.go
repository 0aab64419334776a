// Package store connects the gateway to its shared state: a Valkey or Redis server that holds what
// several gateway replicas must agree on (idempotency records, see package idem). Nothing kept there
// is a record of truth; the server may lose it on restart or evict it when full, and every user of
// it says what it does then.
package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Timeouts applied by NewRedisClient when the URL does not set its own (dial_timeout, read_timeout,
// write_timeout query parameters). They are short on purpose: shared state is an optimisation the
// gateway fails open on, so a slow store must cost a request milliseconds, not seconds.
const (
	DefaultDialTimeout  = 500 * time.Millisecond
	DefaultReadTimeout  = 250 * time.Millisecond
	DefaultWriteTimeout = 250 * time.Millisecond
)

// ClusterStateReload is how old a cluster client's map of slots to nodes
// may grow under traffic before it asks the cluster again.
const ClusterStateReload = 2 * time.Second

// The topologies a store's server may have (redis_mode).
const (
	// ModeSingle is one server, or one primary at one address.
	ModeSingle = "single"
	// ModeCluster is a Redis Cluster (or a Valkey one): the URL names seed
	// nodes, redis://host:port?addr=host:port&addr=host:port.
	ModeCluster = "cluster"
	// ModeSentinel is a primary that Redis Sentinel watches and fails
	// over: the URL names the sentinels the same way, and the master's
	// name is given apart.
	ModeSentinel = "sentinel"
)

// NewRedisClient returns a client for the single server named by rawURL:
// NewClient(ModeSingle, rawURL, "").
func NewRedisClient(rawURL string) (redis.UniversalClient, error) {
	return NewClient(ModeSingle, rawURL, "")
}

// NewClient returns a client for the server, cluster or sentinel-watched
// primary of mode named by rawURL, a redis:// (plain) or rediss:// (TLS)
// URL as go-redis parses it for that mode: redis://:password@valkey:6379/0
// for a single server; redis://:password@node1:6379?addr=node2:6379&addr=node3:6379
// for a cluster's seed nodes (no database: a cluster has only 0); the
// sentinels' addresses the same way for sentinel, with master the name
// they watch the primary under. Timeouts the URL leaves unset get the
// Default* values above, a failed command is retried at most once (unless
// max_retries says otherwise), and a failed dial once, 20 ms later. It does
// not contact the server; the first command does. The caller closes the
// client. An error never quotes the URL.
func NewClient(mode, rawURL, master string) (redis.UniversalClient, error) {
	if rawURL == "" {
		return nil, errors.New("parsing redis url: empty")
	}
	switch mode {
	case "", ModeSingle:
		opts, err := redis.ParseURL(rawURL)
		if err != nil {
			return nil, fmt.Errorf("parsing redis url: %s", urlProblem(err))
		}
		tune(&opts.DialTimeout, &opts.ReadTimeout, &opts.WriteTimeout, &opts.MaxRetries)
		// go-redis dials up to 5 times, 100 ms apart, before a command fails; while the server is
		// down that would add half a second to every call that fails open. Two quick attempts.
		opts.DialerRetries = 2
		opts.DialerRetryTimeout = 20 * time.Millisecond
		c := redis.NewClient(opts)
		c.AddHook(traceHook{})
		c.AddHook(countHook{})
		return c, nil
	case ModeCluster:
		if u, err := url.Parse(rawURL); err == nil && u.Path != "" && u.Path != "/" && u.Path != "/0" {
			// A cluster has database 0 only; go-redis would ignore another.
			return nil, errors.New("parsing redis url (cluster): a cluster has database 0 only")
		}
		opts, err := redis.ParseClusterURL(rawURL)
		if err != nil {
			return nil, fmt.Errorf("parsing redis url (cluster): %s", urlProblem(err))
		}
		tune(&opts.DialTimeout, &opts.ReadTimeout, &opts.WriteTimeout, &opts.MaxRetries)
		// A command may be redirected (MOVED, ASK) or meet a failover:
		// go-redis follows up to MaxRedirects; three, not its eight, so a
		// cluster in trouble costs a call little before it fails open.
		opts.MaxRedirects = 3
		opts.DialerRetries = 2
		opts.DialerRetryTimeout = 20 * time.Millisecond
		// A primary that dies sends no MOVED: go-redis would keep its
		// slots on the dead node until its state reload, 60 s by default.
		// Reload every few seconds under traffic, and at once (go-redis
		// spaces reloads 200 ms apart) when a command fails on the
		// network, so that the gateways follow a failover within a
		// second or two of the cluster.
		if opts.ClusterStateReloadInterval == 0 {
			opts.ClusterStateReloadInterval = ClusterStateReload
		}
		cc := redis.NewClusterClient(opts)
		cc.AddHook(reloadOnFailure{cc})
		cc.AddHook(traceHook{})
		cc.AddHook(countHook{})
		return cc, nil
	case ModeSentinel:
		if master == "" {
			return nil, errors.New("redis sentinel: the master's name (redis_sentinel_master) is required")
		}
		opts, err := redis.ParseFailoverURL(rawURL)
		if err != nil {
			return nil, fmt.Errorf("parsing redis url (sentinel): %s", urlProblem(err))
		}
		opts.MasterName = master
		tune(&opts.DialTimeout, &opts.ReadTimeout, &opts.WriteTimeout, &opts.MaxRetries)
		opts.DialerRetries = 2
		opts.DialerRetryTimeout = 20 * time.Millisecond
		fc := redis.NewFailoverClient(opts)
		fc.AddHook(traceHook{})
		fc.AddHook(countHook{})
		return fc, nil
	}
	return nil, fmt.Errorf("redis mode %q: want single, cluster or sentinel", mode)
}

// tune gives the timeouts and retries a URL leaves unset their defaults.
func tune(dial, read, write *time.Duration, retries *int) {
	if *dial == 0 {
		*dial = DefaultDialTimeout
	}
	if *read == 0 {
		*read = DefaultReadTimeout
	}
	if *write == 0 {
		*write = DefaultWriteTimeout
	}
	if *retries == 0 {
		*retries = 1
	}
}

// urlProblem says what is wrong with a URL that redis.ParseURL refused, in words that quote none of
// it. A *url.Error quotes the whole URL, and its cause, like go-redis's own errors, quotes the part
// refused: a port, a path, an option, an escape. A password with a '/', '?' or '#' in it is cut by
// the parser into exactly those parts (redis://:pa/ss@host has the port "pa" and the path
// "/ss@host"), so only the words before the first colon or quote are kept: "invalid port" of
// `invalid port ":pa" after host`.
func urlProblem(err error) string {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		err = ue.Err
	}
	if _, ok := errors.AsType[url.InvalidHostError](err); ok {
		return "invalid character in host name"
	}
	msg := strings.TrimPrefix(strings.TrimPrefix(err.Error(), "redis: "), "net/url: ")
	if i := strings.IndexAny(msg, `:"`); i >= 0 {
		msg = msg[:i]
	}
	if msg = strings.TrimSpace(msg); msg == "" {
		return "malformed URL"
	}
	return msg
}

// reloadOnFailure asks a cluster client to reload its slots map when a
// command fails on the network (a dead node, a refused dial, a timeout) or
// the cluster says it is down: the map may name a primary that is gone.
type reloadOnFailure struct{ cc *redis.ClusterClient }

func (h reloadOnFailure) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h reloadOnFailure) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.check(err)
		return err
	}
}

func (h reloadOnFailure) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.check(err)
		return err
	}
}

func (h reloadOnFailure) check(err error) {
	if err == nil || errors.Is(err, redis.Nil) || errors.Is(err, context.Canceled) {
		return
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.EOF) || strings.HasPrefix(err.Error(), "CLUSTERDOWN") {
		h.cc.ReloadState(context.Background())
	}
}

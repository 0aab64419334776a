package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/cache"
	"github.com/mcpfleet/mcpfleet/internal/cache/rediscache"
	"github.com/mcpfleet/mcpfleet/internal/config"
	"github.com/mcpfleet/mcpfleet/internal/gateway"
	"github.com/mcpfleet/mcpfleet/internal/idem"
	"github.com/mcpfleet/mcpfleet/internal/identity"
	"github.com/mcpfleet/mcpfleet/internal/limit"
	"github.com/mcpfleet/mcpfleet/internal/limit/redisstore"
	"github.com/mcpfleet/mcpfleet/internal/session/redistasks"
	"github.com/mcpfleet/mcpfleet/internal/store"
	"github.com/mcpfleet/mcpfleet/internal/streams"
	"github.com/mcpfleet/mcpfleet/internal/streams/redisstreams"
	"github.com/redis/go-redis/v9"
)

// Key prefixes of the shared stores in the server of redis_url (or
// redis_url_file).
const (
	idemPrefix   = "mcpfleet:idem:"
	limitPrefix  = "mcpfleet:limit:"
	taskPrefix   = "mcpfleet:task:"
	cachePrefix  = "mcpfleet:cache:"
	streamPrefix = "mcpfleet:stream:"
	// capacityPrefix keys each replica's places (max_inflight) by its name.
	capacityPrefix = "mcpfleet:capacity:"
)

// stores are the shared-state pieces a configuration asks for, built once:
// one Redis client for every store set to redis.
type stores struct {
	redis   redis.UniversalClient // nil when no store is redis
	limiter *limit.Limiter        // nil when no limit is configured
	places  *limit.Limiter        // replicas' max_inflight; nil when none has one
	stop    context.CancelFunc    // ends the key refresh; nil when none runs
	done    chan struct{}
}

// buildStores makes the stores cfg names and hands them to o.
func buildStores(cfg config.Config, o *gateway.Options, log *slog.Logger) (*stores, error) {
	s := &stores{}
	// A service's keys are its own: one service's limits, cache,
	// idempotency records, tasks, kept streams and replica places never
	// meet another's, whatever their replicas are called.
	scope := ""
	if o.Service != "" {
		scope = o.Service + ":"
	}
	url, key, err := redisURL(&cfg)
	if err != nil {
		return nil, usageError{err}
	}
	client := func() (redis.UniversalClient, error) {
		if s.redis == nil {
			c, err := store.NewClient(cfg.RedisMode, url, cfg.RedisSentinelMaster)
			if err != nil {
				return nil, usageError{fmt.Errorf("%s: %w", key, err)}
			}
			s.redis = c
		}
		return s.redis, nil
	}
	if cfg.Idempotency == "redis" {
		c, err := client()
		if err != nil {
			return nil, err
		}
		o.Idempotency = idem.NewRedis(c, idemPrefix+scope, nil)
	}
	if cfg.TaskStore == "redis" {
		c, err := client()
		if err != nil {
			return nil, err
		}
		o.Tasks = redistasks.New(c, taskPrefix+scope)
	}
	if cfg.Resume.Store == "redis" {
		c, err := client()
		if err != nil {
			return nil, err
		}
		o.Streams = redisstreams.New(c, streamPrefix+scope, streams.Options{
			TTL: time.Duration(cfg.Resume.Grace), MaxStreamBytes: cfg.Resume.MaxStreamBytes})
	}
	switch cfg.Cache.Mode {
	case "local":
		o.Cache = cache.NewLocal(cfg.Cache.MaxBytes, cfg.Cache.MaxEntryBytes)
	case "shared":
		c, err := client()
		if err != nil {
			return nil, err
		}
		o.Cache = rediscache.New(c, cachePrefix+scope, cfg.Cache.MaxEntryBytes, time.Duration(cfg.Cache.MaxTTL))
	}
	o.CacheRules = cacheRules(&cfg)
	if lo := limitOptions(&cfg, log); lo != nil {
		var ls limit.Store = limit.NewMemory(cfg.Limits.MaxCallers)
		if cfg.Limits.Store == "redis" {
			c, err := client()
			if err != nil {
				return nil, err
			}
			ls = redisstore.New(c, limitPrefix+scope)
		}
		s.limiter = limit.NewLimiter(ls, lo)
		o.Limits = s.limiter
	}
	if len(o.MaxInflight) > 0 || o.DefaultMaxInflight > 0 {
		// Replica capacity lives where limits do: one count for every
		// gateway with the Redis store, this process's own with memory.
		var ps limit.Store = limit.NewMemory(0)
		if cfg.Limits.Store == "redis" {
			c, err := client()
			if err != nil {
				return nil, err
			}
			ps = redisstore.New(c, capacityPrefix+scope)
		}
		s.places = limit.NewLimiter(ps, &limit.Options{LeaseTTL: time.Duration(cfg.Limits.LeaseTTL),
			FailClosed: cfg.Limits.OnStoreError == "closed", Log: log})
		o.Capacity = s.places
	}
	if s.redis != nil && cfg.ReadyzChecksStore {
		c := s.redis
		o.StoreCheck = func(ctx context.Context) error { return c.Ping(ctx).Err() }
	}
	o.Stores = storeInfos(&cfg, o, s.redis)
	// Last: nothing after it can fail and leave the refresh running.
	if vo, src, on := verifyOptions(&cfg); on {
		v, err := identity.NewVerifier(vo)
		if err != nil {
			s.close()
			return nil, usageError{fmt.Errorf("auth: %w", err)}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		err = v.Load(ctx, src)
		cancel()
		if err != nil {
			// Nothing starts without keys: every request would be refused.
			s.close()
			return nil, usageError{fmt.Errorf("auth: %w", err)}
		}
		o.Auth = v
		ctx, s.stop = context.WithCancel(context.Background())
		s.done = make(chan struct{})
		go func() { defer close(s.done); v.Refresh(ctx, src, log) }()
	}
	return s, nil
}

// redisURL returns the URL of the stores' server and the key that named it
// for errors: redis_url, or the one line of redis_url_file, read now on the
// secret file's terms (config.CheckSecretFile). What is wrong with the file
// is told by its path alone: none of its content, password and all, reaches
// an error.
func redisURL(cfg *config.Config) (url, key string, err error) {
	path := cfg.RedisURLFile
	if path == "" {
		return cfg.RedisURL, "redis_url", nil
	}
	key = "redis_url_file " + path
	if err := config.CheckSecretFile(path); err != nil {
		return "", "", fmt.Errorf("%s: %w", key, err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", "", fmt.Errorf("reading redis_url_file: %w", err)
	}
	url = strings.TrimSpace(string(b))
	switch {
	case url == "":
		err = errors.New("empty: want one line, the redis:// or rediss:// URL")
	case strings.ContainsAny(url, "\r\n"):
		err = errors.New("more than one line: want one line, the redis:// or rediss:// URL")
	default:
		err = config.CheckRedisURL(url)
	}
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", key, err)
	}
	return url, key, nil
}

// close stops lease renewals and closes the Redis client, once the gateway
// no longer serves.
func (s *stores) close() {
	if s.stop != nil {
		s.stop()
		<-s.done
	}
	if s.limiter != nil {
		s.limiter.Close()
	}
	if s.places != nil {
		s.places.Close()
	}
	if s.redis != nil {
		_ = s.redis.Close()
	}
}

// storeInfos lists the stores the gateway uses, for the fleet view: each
// with where it lives and, for Redis, a PING to say whether it answers.
func storeInfos(cfg *config.Config, o *gateway.Options, c redis.UniversalClient) []gateway.StoreInfo {
	var ping func(context.Context) error
	if c != nil {
		ping = func(ctx context.Context) error { return c.Ping(ctx).Err() }
	}
	var out []gateway.StoreInfo
	add := func(name string, redisBacked bool) {
		if redisBacked {
			out = append(out, gateway.StoreInfo{Name: name, Kind: "redis", Check: ping})
			return
		}
		out = append(out, gateway.StoreInfo{Name: name, Kind: "memory"})
	}
	if !o.NoIdempotency {
		add("idempotency", cfg.Idempotency == "redis")
	}
	add("tasks", cfg.TaskStore == "redis")
	add("resume", cfg.Resume.Store == "redis")
	if o.Limits != nil {
		add("limits", cfg.Limits.Store == "redis")
	}
	if o.Cache != nil {
		add("cache", cfg.Cache.Mode == "shared")
	}
	if o.Capacity != nil {
		add("capacity", cfg.Limits.Store == "redis")
	}
	return out
}

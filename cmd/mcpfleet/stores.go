package main

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/cache"
	"github.com/mcpfleet/mcpfleet/internal/cache/rediscache"
	"github.com/mcpfleet/mcpfleet/internal/config"
	"github.com/mcpfleet/mcpfleet/internal/gateway"
	"github.com/mcpfleet/mcpfleet/internal/idem"
	"github.com/mcpfleet/mcpfleet/internal/limit"
	"github.com/mcpfleet/mcpfleet/internal/limit/redisstore"
	"github.com/mcpfleet/mcpfleet/internal/session"
	"github.com/mcpfleet/mcpfleet/internal/store"
	"github.com/redis/go-redis/v9"
)

// Key prefixes of the shared stores in redis_url's server.
const (
	idemPrefix  = "mcpfleet:idem:"
	limitPrefix = "mcpfleet:limit:"
	taskPrefix  = "mcpfleet:task:"
	cachePrefix = "mcpfleet:cache:"
)

// stores are the shared-state pieces a configuration asks for, built once:
// one Redis client for every store set to redis.
type stores struct {
	redis   redis.UniversalClient // nil when no store is redis
	limiter *limit.Limiter        // nil when no limit is configured
}

// buildStores makes the stores cfg names and hands them to o.
func buildStores(cfg config.Config, o *gateway.Options, log *slog.Logger) (*stores, error) {
	s := &stores{}
	client := func() (redis.UniversalClient, error) {
		if s.redis == nil {
			c, err := store.NewRedisClient(cfg.RedisURL)
			if err != nil {
				return nil, usageError{fmt.Errorf("redis_url: %w", err)}
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
		o.Idempotency = idem.NewRedis(c, idemPrefix, nil)
	}
	if cfg.TaskStore == "redis" {
		c, err := client()
		if err != nil {
			return nil, err
		}
		o.Tasks = session.NewRedisTasks(c, taskPrefix)
	}
	switch cfg.Cache.Mode {
	case "local":
		o.Cache = cache.NewLocal(cfg.Cache.MaxBytes, cfg.Cache.MaxEntryBytes)
	case "shared":
		c, err := client()
		if err != nil {
			return nil, err
		}
		o.Cache = rediscache.New(c, cachePrefix, cfg.Cache.MaxEntryBytes, time.Duration(cfg.Cache.MaxTTL))
	}
	o.CacheRules = cfg.CacheRules()
	if lo := cfg.LimitOptions(log); lo != nil {
		var ls limit.Store = limit.NewMemory(cfg.Limits.MaxCallers)
		if cfg.Limits.Store == "redis" {
			c, err := client()
			if err != nil {
				return nil, err
			}
			ls = redisstore.New(c, limitPrefix)
		}
		s.limiter = limit.NewLimiter(ls, lo)
		o.Limits = s.limiter
	}
	return s, nil
}

// close stops lease renewals and closes the Redis client, once the gateway
// no longer serves.
func (s *stores) close() {
	if s.limiter != nil {
		s.limiter.Close()
	}
	if s.redis != nil {
		_ = s.redis.Close()
	}
}

package config

import (
	"fmt"
	"time"
)

// validateCapacity checks max_inflight, the queue, and the pool arithmetic
// of a scaled fleet: a replica that takes max_connections connections must
// not be offered more by every gateway's pool together (gateways ×
// (upstream_pool_size + the health checker's one)), or the replicas beyond
// its budget fail while the gateways' pools look healthy.
func (c *Config) validateCapacity(bad func(string, string, ...any)) {
	capped := c.Discovery.DNSName != "" && c.Discovery.MaxInflight > 0
	for i, u := range c.Upstreams {
		key := fmt.Sprintf("upstreams[%d]", i)
		if u.MaxInflight < 0 {
			bad(key+".max_inflight", "must not be negative, got %d", u.MaxInflight)
		}
		if u.MaxConnections < 0 {
			bad(key+".max_connections", "must not be negative, got %d", u.MaxConnections)
		}
		capped = capped || u.MaxInflight > 0
		c.checkPool(bad, key+".max_connections", u.MaxConnections)
	}
	if c.Discovery.MaxInflight < 0 {
		bad("discovery.max_inflight", "must not be negative, got %d", c.Discovery.MaxInflight)
	}
	if c.Discovery.MaxConnections < 0 {
		bad("discovery.max_connections", "must not be negative, got %d", c.Discovery.MaxConnections)
	}
	if c.Discovery.DNSName != "" {
		c.checkPool(bad, "discovery.max_connections", c.Discovery.MaxConnections)
	}
	switch d := time.Duration(c.QueueTimeout); {
	case d < 0 || d > 5*time.Minute:
		bad("queue_timeout", "must be between 0s and 5m, got %s", d)
	case d > 0 && !capped:
		bad("queue_timeout", "has no effect without max_inflight on some upstream (or discovery.max_inflight)")
	}
	if c.QueueSize < 1 || c.QueueSize > 1<<20 {
		bad("queue_size", "must be between 1 and 1048576, got %d", c.QueueSize)
	}
	if c.UpstreamPoolSize < 0 {
		bad("upstream_pool_size", "must not be negative, got %d", c.UpstreamPoolSize)
	}
	if c.Gateways < 0 {
		bad("gateways", "must not be negative, got %d", c.Gateways)
	}
}

// checkPool refuses a pool that could offer a replica more connections
// than its max_connections once every gateway opens its own.
func (c *Config) checkPool(bad func(string, string, ...any), key string, maxConns int) {
	g := c.Gateways
	if maxConns <= 0 || g <= 0 {
		return
	}
	checks := 0
	if c.HealthCheck.Interval > 0 {
		checks = 1 // the health checker keeps one connection of its own
	}
	fits := maxConns/g - checks // the largest pool that fits
	switch {
	case fits < 1:
		bad(key, "%d connections cannot serve %d gateways: each needs at least %d (one pooled connection%s)",
			maxConns, g, 1+checks, map[bool]string{true: " and one for health checks", false: ""}[checks == 1])
	case c.UpstreamPoolSize == 0:
		bad(key, "%d connections, but each of the %d gateways may open any number (upstream_pool_size 0: no bound); set upstream_pool_size to %d or less",
			maxConns, g, fits)
	case g*(c.UpstreamPoolSize+checks) > maxConns:
		bad(key, "%d connections, but %d gateways × (upstream_pool_size %d + %d for health checks) = %d could be open; set upstream_pool_size to %d or less, or raise max_connections",
			maxConns, g, c.UpstreamPoolSize, checks, g*(c.UpstreamPoolSize+checks), fits)
	}
}

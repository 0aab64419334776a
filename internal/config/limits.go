package config

import (
	"math"
	"strings"
	"time"
)

func (c *Config) validateLimits(bad func(string, string, ...any)) {
	l := c.Limits
	if l.Store != "memory" && l.Store != "redis" {
		bad("limits.store", "must be memory or redis, got %q", l.Store)
	}
	if l.OnStoreError != "open" && l.OnStoreError != "closed" {
		bad("limits.on_store_error", "must be open or closed, got %q", l.OnStoreError)
	}
	if math.IsNaN(l.Rate) || l.Rate < 0 || l.Rate > 1e6 {
		bad("limits.rate", "must be between 0 and 1000000 calls per second, got %v", l.Rate)
	}
	if l.Burst < 0 || l.Burst > 1e6 {
		bad("limits.burst", "must be between 0 and 1000000, got %d", l.Burst)
	}
	if l.Burst > 0 && l.Rate == 0 {
		bad("limits.burst", "has no effect without limits.rate")
	}
	if l.Concurrency < 0 {
		bad("limits.concurrency", "must not be negative, got %d", l.Concurrency)
	}
	for tool, n := range l.Tools {
		if tool == "" || n < 1 {
			bad("limits.tools", "each tool needs a name and a cap of at least 1, got %q: %d", tool, n)
		}
	}
	if len(l.Methods) == 0 {
		bad("limits.methods", "name at least one method (tools/call is the default)")
	}
	for _, m := range l.Methods {
		if m == "" || strings.HasPrefix(m, "notifications/") || m == "initialize" {
			bad("limits.methods", "%q cannot be governed: requests only, and not initialize", m)
		}
	}
	if d := time.Duration(l.LeaseTTL); d < time.Second || d > time.Hour {
		bad("limits.lease_ttl", "must be between 1s and 1h, got %s", d)
	}
	if l.MaxCallers < 1 {
		bad("limits.max_callers", "must be at least 1, got %d", l.MaxCallers)
	}
	if l.Sessions < 0 || l.Sessions > 1e6 {
		bad("limits.sessions", "must be between 0 and 1000000 sessions a minute, got %d", l.Sessions)
	}
	if math.IsNaN(l.PerAddress) || l.PerAddress < 0 || l.PerAddress > 1e6 {
		bad("limits.per_address", "must be between 0 and 1000000 calls per second, got %v", l.PerAddress)
	}
}

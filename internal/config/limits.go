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

// Limits configures the admission step (docs/GATEWAY.md, "Limits").
type Limits struct {
	// Store is memory (each gateway process its own limits) or redis (one
	// set of limits for every gateway sharing redis_url).
	Store string `yaml:"store"`
	// Rate is each caller's calls per second; 0 means no rate limit.
	Rate float64 `yaml:"rate"`
	// Burst is each caller's bucket size; 0 means the rate rounded up.
	Burst int `yaml:"burst"`
	// Concurrency is each caller's calls in flight; 0 means no limit.
	Concurrency int `yaml:"concurrency"`
	// Tools caps the calls of each named tool in flight, fleet-wide.
	Tools map[string]int `yaml:"tools"`
	// Methods are the JSON-RPC methods governed.
	Methods []string `yaml:"methods"`
	// OnStoreError is open (let calls through) or closed (refuse them,
	// 503) while the store does not answer.
	OnStoreError string `yaml:"on_store_error"`
	// LeaseTTL is how long a dead gateway's leases outlive it.
	LeaseTTL Duration `yaml:"lease_ttl"`
	// MaxCallers bounds the memory store.
	MaxCallers int `yaml:"max_callers"`
	// Sessions is each caller's new sessions (initialize) per minute; 0
	// means no limit.
	Sessions int `yaml:"sessions"`
	// PerAddress is each client address's calls per second, beside the
	// caller's limits, for callers whose token is not verified; 0 means no
	// limit.
	PerAddress float64 `yaml:"per_address"`
}

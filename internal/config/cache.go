package config

import "time"

// Cache configures the cache step (docs/GATEWAY.md, "Caching").
type Cache struct {
	// Mode is off, local (each gateway its own, bounded by MaxBytes) or
	// shared (one copy in redis_url's server).
	Mode string `yaml:"mode"`
	// Tools are the tools whose tools/call results are kept, if the
	// replicas declare them readOnlyHint.
	Tools []string `yaml:"tools"`
	// TTL is how long a kept tool result lives.
	TTL Duration `yaml:"ttl"`
	// MaxTTL bounds every entry, whatever ttlMs says.
	MaxTTL Duration `yaml:"max_ttl"`
	// MaxBytes bounds the local cache.
	MaxBytes int `yaml:"max_bytes"`
	// MaxEntryBytes bounds one entry, local or shared.
	MaxEntryBytes int `yaml:"max_entry_bytes"`
}

func (c *Config) validateCache(bad func(string, string, ...any)) {
	k := c.Cache
	switch k.Mode {
	case "off", "local", "shared":
	default:
		bad("cache.mode", "must be off, local or shared, got %q", k.Mode)
	}
	if k.Mode == "shared" && c.SecretFile == "" {
		bad("cache.mode", "shared needs secret_file, so that every gateway names a caller's private entries alike (mcpfleet secret makes one)")
	}
	for _, t := range k.Tools {
		if t == "" {
			bad("cache.tools", "a tool name is empty")
		}
	}
	if d := time.Duration(k.MaxTTL); d < time.Second || d > 24*time.Hour {
		bad("cache.max_ttl", "must be between 1s and 24h, got %s", d)
	}
	if d := time.Duration(k.TTL); d < time.Millisecond || d > time.Duration(k.MaxTTL) {
		bad("cache.ttl", "must be positive and at most cache.max_ttl, got %s", d)
	}
	if k.MaxEntryBytes < 1024 || k.MaxEntryBytes > 64<<20 {
		bad("cache.max_entry_bytes", "must be between 1024 and 67108864, got %d", k.MaxEntryBytes)
	}
	if k.MaxBytes < k.MaxEntryBytes {
		bad("cache.max_bytes", "must be at least cache.max_entry_bytes, got %d", k.MaxBytes)
	}
}

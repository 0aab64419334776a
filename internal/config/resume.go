package config

import "time"

// Resume bounds what the gateway keeps of legacy (2025-11-25) SSE streams
// whose client went away, so that the client can resume them with a GET
// and Last-Event-ID (docs/GATEWAY.md, "Resumable streams").
type Resume struct {
	// Grace is how long a stream nobody resumed is kept after its last
	// event.
	Grace Duration `yaml:"grace"`
	// MaxStreamBytes bounds one stream's kept events: over it the oldest
	// go, and a resume that needs them is answered 410.
	MaxStreamBytes int `yaml:"max_stream_bytes"`
	// MaxTotalBytes bounds the kept events of every stream of this process
	// together.
	MaxTotalBytes int64 `yaml:"max_total_bytes"`
	// Store is where the streams of clients that went away are kept:
	// memory (this process: a resume must come back to it) or redis (one
	// buffer in redis_url's server, so that a resume through any gateway
	// replays them).
	Store string `yaml:"store"`
}

func defaultResume() Resume {
	return Resume{Grace: Duration(5 * time.Minute), MaxStreamBytes: 1 << 20, MaxTotalBytes: 256 << 20, Store: "memory"}
}

// validateResume checks the resume.* keys.
func (c *Config) validateResume(bad func(string, string, ...any)) {
	r := c.Resume
	if g := time.Duration(r.Grace); g < time.Second || g > time.Hour {
		bad("resume.grace", "must be between 1s and 1h, got %s", g)
	}
	if r.MaxStreamBytes < 4<<10 {
		bad("resume.max_stream_bytes", "must be at least 4096, got %d", r.MaxStreamBytes)
	}
	if r.MaxTotalBytes < int64(r.MaxStreamBytes) {
		bad("resume.max_total_bytes", "must be at least resume.max_stream_bytes (%d), got %d", r.MaxStreamBytes, r.MaxTotalBytes)
	}
	switch r.Store {
	case "memory":
	case "redis":
		if c.SecretFile == "" {
			// Event IDs are sealed with the session keyring: a gateway with
			// a keyring of its own could not open another's.
			bad("resume.store", "redis needs secret_file, so that every gateway opens the others' event IDs (mcpfleet secret makes one)")
		}
		if c.RedisURL == "" && c.RedisURLFile == "" {
			bad("redis_url or redis_url_file", "required when resume.store is redis")
		}
	default:
		bad("resume.store", "must be memory or redis, got %q", r.Store)
	}
}

package config

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/balance"
	"github.com/mcpfleet/mcpfleet/internal/identity"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// Validate checks every key and names the first bad one in its error. It
// also resolves server when it is not set: std with tls.cert_file or
// tls.key_file, h1 without (tls.go), so that every reader after it sees h1
// or std.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{key}, a...)...))
	}
	checkAddr(bad, "listen", c.Listen, true)
	checkAddr(bad, "admin", c.Admin, false)
	switch {
	case c.AdminTokenFile != "" && c.Admin == "":
		bad("admin_token_file", "has no effect without admin (the admin listener's address)")
	case strings.ContainsAny(c.AdminTokenFile, "\x00\r\n"):
		bad("admin_token_file", "want the path of a file that holds the token")
	}
	c.validateEdge(bad)
	if !strings.HasPrefix(c.Path, "/") || c.Path == "/healthz" || c.Path == "/readyz" {
		bad("path", "must start with / and not be /healthz or /readyz, got %q", c.Path)
	}
	switch {
	case c.Discovery.DNSName != "" && len(c.Upstreams) > 0:
		bad("discovery.dns_name", "use either upstreams or discovery, not both")
	case c.Discovery.DNSName == "" && len(c.Upstreams) == 0 && len(c.Services) == 0:
		bad("upstreams", "at least one upstream (or discovery.dns_name) is required")
	}
	c.validateDiscovery(bad)
	c.validateHealthCheck(bad)
	c.validateTelemetry(bad)
	c.validateAudit(bad)
	seen := map[string]bool{}
	for i, u := range c.Upstreams {
		key := fmt.Sprintf("upstreams[%d]", i)
		if u.IsStdio() {
			validateStdio(key, &c.Upstreams[i], bad)
			if seen[u.StdioName()] {
				bad(key+".name", "duplicate replica name %q", u.StdioName())
			}
			seen[u.StdioName()] = true
			continue
		}
		parsed, err := upstream.ParseURL(u.URL)
		if err != nil {
			bad(key+".url", "%v", err)
			continue
		}
		if u.SSEURL != "" {
			if _, err := upstream.ParseURL(u.SSEURL); err != nil {
				bad(key+".sse_url", "%v", err)
			}
		}
		name := u.Name
		if name == "" {
			name = parsed.Host
		}
		if seen[name] {
			bad(key+".name", "duplicate replica name %q", name)
		}
		seen[name] = true
	}
	if _, err := balance.ParsePolicy(c.Balance); err != nil {
		bad("balance", "%v", err)
	}
	if c.HashEpsilon < 0 || c.HashEpsilon > 10 {
		bad("hash_epsilon", "must be between 0 and 10, got %v", c.HashEpsilon)
	}
	if c.HashMinLoad < 0 {
		bad("hash_min_load", "must not be negative, got %d", c.HashMinLoad)
	}
	if c.Sessions != SessionsPinned && c.Sessions != SessionsShared {
		bad("sessions", "must be pinned or shared, got %q", c.Sessions)
	}
	if _, err := identity.NewProxies(c.TrustedProxies, c.TrustedProxyHeader); err != nil {
		bad("trusted_proxies", "%v", err)
	}
	nonNeg(bad, "keepalive", time.Duration(c.KeepAlive))
	if c.Retries < 0 || c.Retries > 10 {
		bad("retries", "must be between 0 and 10, got %d", c.Retries)
	}
	if c.MaxBatch < 1 || c.MaxBatch > 1000 {
		bad("max_batch", "must be between 1 and 1000 messages, got %d", c.MaxBatch)
	}
	if c.MaxBodyBytes < 1024 {
		bad("max_body_bytes", "must be at least 1024, got %d", c.MaxBodyBytes)
	}
	if c.MaxHeaderBytes < 4096 {
		bad("max_header_bytes", "must be at least 4096, got %d", c.MaxHeaderBytes)
	}
	if c.MaxEventBytes < 1024 {
		bad("max_event_bytes", "must be at least 1024, got %d", c.MaxEventBytes)
	}
	for key, d := range map[string]Duration{
		"read_header_timeout": c.ReadHeaderTimeout, "body_read_timeout": c.BodyReadTimeout,
		"write_timeout": c.WriteTimeout, "idle_timeout": c.IdleTimeout,
		"dial_timeout": c.DialTimeout,
	} {
		if d <= 0 {
			bad(key, "must be positive, got %s", time.Duration(d))
		}
	}
	nonNeg(bad, "grace", time.Duration(c.Grace))
	if d := time.Duration(c.DrainDelay); d < 0 || d > 5*time.Minute {
		bad("drain_delay", "must be between 0s and 5m, got %s", d)
	}
	if c.Idempotency != "memory" && c.Idempotency != "redis" && c.Idempotency != "off" {
		bad("idempotency", "must be memory, redis or off, got %q", c.Idempotency)
	}
	if c.TaskStore != "memory" && c.TaskStore != "redis" {
		bad("task_store", "must be memory or redis, got %q", c.TaskStore)
	}
	c.validateLimits(bad)
	c.validateCapacity(bad)
	c.validateTools(bad)
	c.validateResume(bad)
	c.validateCache(bad)
	c.validateAuth(bad)
	c.validateAuthz(bad)
	c.validateBinding(bad)
	for _, p := range c.PassthroughPaths {
		if !strings.HasPrefix(p, "/") || p == "/" || p == c.Path || p == "/healthz" || p == "/readyz" || strings.ContainsAny(p, "?#") {
			bad("passthrough_paths", "%q: want a path other than /, the MCP path, /healthz and /readyz, without query or fragment", p)
		}
	}
	c.validateSSE(bad)
	c.validateServer(bad)
	if c.Idempotency == "redis" && c.SecretFile == "" {
		// A record is keyed by the caller's routing key, an HMAC under the
		// routing salt: gateways with salts of their own would key one
		// caller's re-issued call apart, and run it again.
		bad("idempotency", "redis needs secret_file, so that every gateway keys a caller's calls alike (mcpfleet secret makes one)")
	}
	if c.Limits.Store == "redis" && c.SecretFile == "" {
		// Callers are named by an HMAC under the routing salt: gateways
		// with salts of their own would each count a caller apart.
		bad("limits.store", "redis needs secret_file, so that every gateway names a caller alike (mcpfleet secret makes one)")
	}
	c.validateRedis(bad)
	if c.IdempotencyLease <= 0 || c.IdempotencyTTL <= 0 {
		bad("idempotency_lease", "idempotency_lease and idempotency_ttl must be positive")
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		bad("log_level", "must be debug, info, warn or error, got %q", c.LogLevel)
	}
	if _, err := ParseMemoryLimit(c.MemoryLimit); err != nil {
		bad("memory_limit", "%v", err)
	}
	if c.SSESendBuffer != 0 && (c.SSESendBuffer < 4<<10 || c.SSESendBuffer > 64<<20) {
		bad("sse_send_buffer", "want 0 (the kernel's own) or 4KiB to 64MiB, got %d bytes", c.SSESendBuffer)
	}
	if c.ServicesReady != ServicesReadyAll && c.ServicesReady != ServicesReadyAny {
		bad("services_ready", "must be all or any, got %q", c.ServicesReady)
	}
	if len(errs) == 0 && len(c.Services) > 0 {
		// Each service is the top level, as it is now, with its keys over.
		list, err := c.ResolveServices()
		if err == nil {
			err = servicesWithinAllowedHosts(list, c.AllowedHosts)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// validateRedis checks that a store set to redis has its server, named by
// redis_url or redis_url_file but not both. The file is serve's to read:
// only the path's shape is checked here.
func (c *Config) validateRedis(bad func(string, string, ...any)) {
	switch c.RedisMode {
	case "single", "cluster":
		if c.RedisSentinelMaster != "" {
			bad("redis_sentinel_master", "only with redis_mode sentinel")
		}
	case "sentinel":
		if c.RedisSentinelMaster == "" {
			bad("redis_sentinel_master", "required with redis_mode sentinel: the name the sentinels watch the primary under")
		}
	default:
		bad("redis_mode", "must be single, cluster or sentinel, got %q", c.RedisMode)
	}
	switch {
	case c.RedisURL != "" && c.RedisURLFile != "":
		bad("redis_url", "use either redis_url or redis_url_file, not both")
	case c.RedisURL != "":
		if err := CheckRedisURL(c.RedisURL); err != nil {
			bad("redis_url", "%v", err)
		}
	case c.RedisURLFile != "":
		if strings.Contains(c.RedisURLFile, "://") || strings.ContainsAny(c.RedisURLFile, "\x00\r\n") {
			// Not quoted: it may be the URL itself, password and all.
			bad("redis_url_file", "want the path of a file that holds the URL, not the URL")
		}
	default:
		for _, s := range [][2]string{{"idempotency", c.Idempotency}, {"limits.store", c.Limits.Store}, {"task_store", c.TaskStore}, {"cache.mode", c.Cache.Mode}} {
			if s[1] == "redis" || s[1] == "shared" {
				bad("redis_url or redis_url_file", "required when %s is %s", s[0], s[1])
			}
		}
	}
}

// CheckRedisURL checks the shape of the URL of redis_url, or of the one
// that redis_url_file holds: redis:// or rediss://. Its error quotes none
// of it.
func CheckRedisURL(u string) error {
	if !strings.HasPrefix(u, "redis://") && !strings.HasPrefix(u, "rediss://") {
		return errors.New("not a redis:// or rediss:// URL")
	}
	return nil
}

func nonNeg(bad func(string, string, ...any), key string, d time.Duration) {
	if d < 0 {
		bad(key, "must not be negative, got %s", d)
	}
}

func checkAddr(bad func(string, string, ...any), key, addr string, required bool) {
	if addr == "" {
		if required {
			bad(key, "an address is required")
		}
		return
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		bad(key, "want host:port, got %q", addr)
	}
}

// validateSSE checks the paths of the 2024-11-05 HTTP+SSE transport: when
// it is on, two paths of their own, neither the MCP path, /healthz, /readyz
// nor one that a passthrough path covers.
func (c *Config) validateSSE(bad func(string, string, ...any)) {
	if c.SSEPath == "" {
		return
	}
	if c.SSEMessagesPath == c.SSEPath {
		bad("sse_messages_path", "must differ from sse_path, got %q for both", c.SSEPath)
	}
	for _, k := range [][2]string{{"sse_path", c.SSEPath}, {"sse_messages_path", c.SSEMessagesPath}} {
		key, p := k[0], k[1]
		if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, "?#") || p == c.Path || p == "/healthz" || p == "/readyz" {
			bad(key, "%q: want a path of its own, other than the MCP path, /healthz and /readyz, without query or fragment", p)
		}
		for _, pt := range c.PassthroughPaths {
			if p == pt || (strings.HasSuffix(pt, "/") && strings.HasPrefix(p, pt)) {
				bad(key, "%q is covered by passthrough_paths entry %q", p, pt)
			}
		}
	}
}

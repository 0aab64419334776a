// Package config reads the gateway's YAML configuration: its schema, its
// defaults and its validation. It is the only package that reads files.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/balance"
	"github.com/mcpfleet/mcpfleet/internal/identity"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
	"go.yaml.in/yaml/v3"
)

// The values of Config.Sessions.
const (
	// SessionsPinned sends a session's requests to the replica that minted it.
	SessionsPinned = "pinned"
	// SessionsShared balances every request: the replicas share sessions
	// (a shared session store, or stateless servers).
	SessionsShared = "shared"
)

// Config is the gateway's configuration. docs/CONFIG.md documents every key;
// Default gives every default.
type Config struct {
	// Listen is the MCP listener's address; /healthz and /readyz are served
	// there too.
	Listen string `yaml:"listen"`
	// Admin is the admin listener's address (/metrics, the fleet page and
	// API); "" turns it off. Off loopback it needs AdminTokenFile.
	Admin string `yaml:"admin"`
	// AdminTokenFile is the path of a file holding the bearer token every
	// route of the admin listener but the page and an open /metrics then
	// requires (docs/ADMIN.md); "" requires none.
	AdminTokenFile string `yaml:"admin_token_file"`
	// Path is the MCP endpoint's path.
	Path string `yaml:"path"`
	// SSEPath is where the deprecated 2024-11-05 HTTP+SSE transport opens
	// its streams; "" turns that transport off.
	SSEPath string `yaml:"sse_path"`
	// SSEMessagesPath is where that transport's messages are POSTed.
	SSEMessagesPath string `yaml:"sse_messages_path"`
	// Upstreams are the replicas.
	Upstreams []Upstream `yaml:"upstreams"`
	// Discovery finds the replicas in DNS instead; it replaces Upstreams.
	Discovery Discovery `yaml:"discovery"`
	// HealthCheck configures active health checks of the replicas.
	HealthCheck HealthCheck `yaml:"health_check"`
	// Balance is hash, least-inflight or round-robin.
	Balance string `yaml:"balance"`
	// HashEpsilon is the hash policy's load bound: a replica over
	// (1+HashEpsilon) x the average in flight passes new work on; 0 turns
	// the bound off.
	HashEpsilon float64 `yaml:"hash_epsilon"`
	// HashMinLoad is the floor under the bound: a replica with fewer
	// requests in flight keeps its callers; 0 means no floor.
	HashMinLoad int64 `yaml:"hash_min_load"`
	// Sessions is pinned (a 2025-11-25 session's requests go to the
	// replica that minted it) or shared (the replicas share their
	// sessions: each request is balanced like new work).
	Sessions string `yaml:"sessions"`
	// SessionBinding is identity (a session, 2024-11-05 endpoint or task
	// is for the caller that opened it alone) or none (for anyone holding
	// its ID); binding.go.
	SessionBinding string `yaml:"session_binding"`
	// SessionMaxAge ends a sealed session ID this long after its issue
	// time; 0 never ends one by its age.
	SessionMaxAge Duration `yaml:"session_max_age"`
	// TrustedProxies may name the client in TrustedProxyHeader.
	TrustedProxies []string `yaml:"trusted_proxies"`
	// TrustedProxyHeader is the header trusted proxies name the client in.
	TrustedProxyHeader string `yaml:"trusted_proxy_header"`
	// KeepAlive is the SSE keep-alive interval; 0 turns keep-alives off.
	KeepAlive Duration `yaml:"keepalive"`
	// Retries bounds moves of an undelivered request to another replica.
	Retries int `yaml:"retries"`
	// MaxBodyBytes bounds a request body.
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// MaxBatch bounds the messages of a JSON-RPC batch where the protocol
	// version still allows batches (2025-03-26 and older).
	MaxBatch int `yaml:"max_batch"`
	// MaxHeaderBytes bounds a request's headers.
	MaxHeaderBytes int `yaml:"max_header_bytes"`
	// MaxEventBytes bounds one relayed SSE event.
	MaxEventBytes int `yaml:"max_event_bytes"`
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout Duration `yaml:"read_header_timeout"`
	// BodyReadTimeout bounds reading a request's body.
	BodyReadTimeout Duration `yaml:"body_read_timeout"`
	// WriteTimeout bounds each write to a client.
	WriteTimeout Duration `yaml:"write_timeout"`
	// IdleTimeout closes client connections idle between requests.
	IdleTimeout Duration `yaml:"idle_timeout"`
	// DialTimeout bounds connecting to a replica.
	DialTimeout Duration `yaml:"dial_timeout"`
	// SecretFile holds the session keyring and the routing salt; "" means
	// random ones, made at start.
	SecretFile string `yaml:"secret_file"`
	// Grace is how long requests and streams in flight may finish on
	// shutdown.
	Grace Duration `yaml:"grace"`
	// DrainDelay is how long the listener keeps serving after SIGTERM, with
	// /readyz answering draining, before it stops accepting.
	DrainDelay Duration `yaml:"drain_delay"`
	// ReadyzChecksStore makes /readyz answer 503 while the Redis or Valkey
	// server of a store set to redis does not answer.
	ReadyzChecksStore bool `yaml:"readyz_checks_store"`
	// AllowAnyHost turns off DNS-rebinding protection on loopback listeners.
	AllowAnyHost bool `yaml:"allow_any_host"`
	// Edge is which Host and Origin the listeners take and what the admin
	// token guards (edge.go).
	Edge `yaml:",inline"`
	// Idempotency is where idempotency records live: memory, redis or off.
	Idempotency string `yaml:"idempotency"`
	// RedisURL is the Redis or Valkey server (redis:// or rediss://) for
	// every store set to redis (idempotency, limits.store, task_store).
	RedisURL string `yaml:"redis_url"`
	// RedisURLFile is the path of a file that holds that URL instead, on one
	// line, so that a password stays out of this file; serve reads it at
	// start, on the secret file's terms. Either key, not both.
	RedisURLFile string `yaml:"redis_url_file"`
	// RedisMode is the server's topology: single (one server or primary),
	// cluster (Redis Cluster: the URL names seed nodes,
	// redis://host:port?addr=host:port&addr=...) or sentinel (a primary
	// Redis Sentinel fails over: the URL names the sentinels that way).
	RedisMode string `yaml:"redis_mode"`
	// RedisSentinelMaster is the name the sentinels watch the primary
	// under; required with redis_mode sentinel, refused otherwise.
	RedisSentinelMaster string `yaml:"redis_sentinel_master"`
	// Limits admits governed calls: rate and concurrency per caller, caps
	// per tool.
	Limits Limits `yaml:"limits"`
	// TaskStore is where the task -> replica registry lives: memory or
	// redis.
	TaskStore string `yaml:"task_store"`
	// Cache keeps answers the replicas said may be given again.
	Cache Cache `yaml:"cache"`
	// Auth verifies bearer JWTs at the gateway.
	Auth Auth `yaml:"auth"`
	// PassthroughPaths go to a replica as they are, besides the OAuth
	// discovery documents, which always do.
	PassthroughPaths []string `yaml:"passthrough_paths"`
	// Server is the MCP listener's HTTP stack and TLS (tls.go): "" (not
	// set) until Validate resolves it to ServerStd with TLS, else ServerH1.
	Server string `yaml:"server"`
	// TLS terminates TLS on the MCP listener (tls.go).
	TLS TLS `yaml:"tls"`
	// IdempotencyLease bounds how long a running call holds its record.
	IdempotencyLease Duration `yaml:"idempotency_lease"`
	// IdempotencyTTL is how long a recorded answer is kept.
	IdempotencyTTL Duration `yaml:"idempotency_ttl"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `yaml:"log_level"`
	// Resume bounds what is kept of legacy streams for a resume (resume.go).
	Resume Resume `yaml:"resume"`
	// QueueTimeout is how long a request that finds every replica it may
	// go to at its max_inflight waits for a place; 0 answers it at once
	// (503 with Retry-After). capacity.go.
	QueueTimeout Duration `yaml:"queue_timeout"`
	// QueueSize bounds the requests waiting for a place, per gateway.
	QueueSize int `yaml:"queue_size"`
	// UpstreamPoolSize bounds the connections each gateway keeps open to
	// each replica, idle ones included; 0 means no bound.
	UpstreamPoolSize int `yaml:"upstream_pool_size"`
	// Tools configures what the gateway learns of the replicas' tools
	// (tools.go).
	Tools Tools `yaml:"tools"`
	// Gateways is how many gateway processes run this configuration, for
	// the pool arithmetic against max_connections; 0 means not said.
	Gateways int `yaml:"gateways"`
	// Services are the MCP services served, each its own fleet, chosen by
	// path or host (services.go); none means one, at Path.
	Services []ServiceSpec `yaml:"services"`
	// ServicesReady is all (/readyz ready when every service has an
	// eligible replica) or any (when one has).
	ServicesReady string `yaml:"services_ready"`
	// MemoryLimit is the process's memory budget (memory.go): "" for 90%
	// of the cgroup's memory limit when there is one, "off", a size such
	// as 256MiB, or a share such as 60% of the cgroup's limit.
	MemoryLimit string `yaml:"memory_limit"`
	// SSESendBuffer is the kernel send buffer of every client connection
	// of the MCP listener (SO_SNDBUF), which bounds what a client that
	// stops reading holds in the kernel; 0 leaves the kernel's own.
	SSESendBuffer Size `yaml:"sse_send_buffer"`
	// Telemetry exports traces and metrics over OTLP (telemetry.go).
	Telemetry Telemetry `yaml:"telemetry"`
}

// Discovery finds replicas as every A/AAAA record of a DNS name, such as a
// Kubernetes headless service, re-resolved on an interval.
type Discovery struct {
	DNSName  string   `yaml:"dns_name"` // "" turns discovery off
	Port     int      `yaml:"port"`     // the replicas' port; required with dns_name
	Scheme   string   `yaml:"scheme"`   // http or https
	Path     string   `yaml:"path"`     // the replicas' MCP path
	SSEPath  string   `yaml:"sse_path"` // the replicas' 2024-11-05 SSE path
	Interval Duration `yaml:"interval"` // how often to re-resolve
	// MaxInflight and MaxConnections apply to every discovered replica,
	// as upstreams[].max_inflight and max_connections do to one.
	MaxInflight    int `yaml:"max_inflight"`
	MaxConnections int `yaml:"max_connections"`
}

// HealthCheck configures active checks of each replica's health endpoint.
type HealthCheck struct {
	Interval Duration `yaml:"interval"` // 0 turns active checks (and passive ejection) off
	Timeout  Duration `yaml:"timeout"`
	Fall     int      `yaml:"fall"` // consecutive failures that take a replica down
	Rise     int      `yaml:"rise"` // consecutive successes that bring it back
	Path     string   `yaml:"path"`
	Host     string   `yaml:"host"` // Host header; "" means each replica URL's host
	Mode     string   `yaml:"mode"` // http (path; 404 means check by connection) or mcp
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

// Auth configures JWT verification (docs/GATEWAY.md, "Deploying in front
// of an OAuth-protected server"). Off unless a key source is named.
type Auth struct {
	// JWKSFile or JWKSURL is where the issuers' public keys are.
	JWKSFile string `yaml:"jwks_file"`
	JWKSURL  string `yaml:"jwks_url"`
	// JWKSRefresh is how often the keys are read again.
	JWKSRefresh Duration `yaml:"jwks_refresh"`
	// Issuers are the accepted iss values; Audiences the accepted aud
	// values (empty: refused unless AudiencesAny).
	Issuers   []string `yaml:"issuers"`
	Audiences []string `yaml:"audiences"`
	// AudiencesAny, with no Audiences, accepts any aud on purpose.
	AudiencesAny bool `yaml:"audiences_any"`
	// MaxTokenLifetime bounds a token's exp - iat (exp - now without iat);
	// 0 means no bound.
	MaxTokenLifetime Duration `yaml:"max_token_lifetime"`
	// ClockSkew is the leeway on exp, nbf and iat.
	ClockSkew Duration `yaml:"clock_skew"`
	// ResourceMetadata is the URL a 401's challenge names; "" means the
	// well-known URL at the origin the client used.
	ResourceMetadata string `yaml:"resource_metadata"`
}

// On reports whether verification is configured.
func (a Auth) On() bool { return a.JWKSFile != "" || a.JWKSURL != "" }

// Upstream is one replica.
type Upstream struct {
	// Name identifies the replica in metrics and logs; "" means host:port.
	Name string `yaml:"name"`
	// URL is the replica's MCP endpoint.
	URL string `yaml:"url"`
	// SSEURL is the replica's 2024-11-05 SSE endpoint; "" means URL's
	// scheme and host with the path /sse.
	SSEURL string `yaml:"sse_url"`
	// MaxInflight is how many requests the replica runs at once, counted
	// over every gateway that shares limits.store; 0 means no cap.
	MaxInflight int `yaml:"max_inflight"`
	// MaxConnections is how many connections the replica takes; with
	// gateways, serve refuses a pool that could open more.
	MaxConnections int `yaml:"max_connections"`
}

// Default returns the configuration with every default filled in and no
// upstreams.
func Default() Config {
	return Config{
		Listen:            "127.0.0.1:8080",
		Path:              "/mcp",
		SSEPath:           upstream.DefaultSSEPath,
		SSEMessagesPath:   "/messages",
		Balance:           "hash",
		HashEpsilon:       balance.DefaultEpsilon,
		HashMinLoad:       balance.DefaultMinLoad,
		Sessions:          SessionsPinned,
		SessionBinding:    SessionBindingIdentity,
		SessionMaxAge:     Duration(24 * time.Hour),
		KeepAlive:         Duration(15 * time.Second),
		Retries:           balance.DefaultRetries,
		MaxBodyBytes:      4 << 20,
		MaxBatch:          16,
		MaxHeaderBytes:    64 << 10,
		MaxEventBytes:     16 << 20,
		ReadHeaderTimeout: Duration(10 * time.Second),
		BodyReadTimeout:   Duration(30 * time.Second),
		WriteTimeout:      Duration(30 * time.Second),
		IdleTimeout:       Duration(120 * time.Second),
		DialTimeout:       Duration(5 * time.Second),
		Grace:             Duration(15 * time.Second),
		ReadyzChecksStore: true,
		Edge:              Edge{AdminMetricsOpen: true},
		LogLevel:          "info",
		Discovery:         Discovery{Scheme: "http", Path: "/mcp", SSEPath: upstream.DefaultSSEPath, Interval: Duration(10 * time.Second)},
		HealthCheck: HealthCheck{Interval: Duration(upstream.DefaultCheckInterval), Timeout: Duration(upstream.DefaultCheckTimeout),
			Fall: upstream.DefaultFall, Rise: upstream.DefaultRise, Path: upstream.DefaultCheckPath, Mode: upstream.CheckHTTP},
		Idempotency: "memory",
		TaskStore:   "memory",
		RedisMode:   "single",
		Limits: Limits{Store: "memory", Methods: []string{"tools/call"}, OnStoreError: "open",
			LeaseTTL: Duration(30 * time.Second), MaxCallers: 100_000},
		Auth: Auth{JWKSRefresh: Duration(5 * time.Minute), ClockSkew: Duration(30 * time.Second),
			MaxTokenLifetime: Duration(identity.DefaultMaxLifetime)},
		Cache: Cache{Mode: "off", TTL: Duration(time.Minute), MaxTTL: Duration(time.Hour),
			MaxBytes: 64 << 20, MaxEntryBytes: 1 << 20},
		IdempotencyLease: Duration(15 * time.Minute),
		IdempotencyTTL:   Duration(24 * time.Hour),
		Resume:           defaultResume(),
		QueueSize:        1024,
		Tools:            Tools{Refresh: Duration(30 * time.Second)},
		ServicesReady:    ServicesReadyAll,
		SSESendBuffer:    256 << 10,
	}
}

// Load reads a YAML file over the defaults and validates the result.
func Load(path string) (Config, error) {
	c, err := Read(path)
	if err != nil {
		return Config{}, err
	}
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, Locate(err, path))
	}
	return c, nil
}

// Parse reads YAML over the defaults, refusing unknown keys, and validates
// the result. Nothing is applied unless all of it is valid.
func Parse(b []byte) (Config, error) {
	c, err := decode(b)
	if err != nil {
		return Config{}, err
	}
	if err := c.Validate(); err != nil {
		return Config{}, locate(err, b)
	}
	return c, nil
}

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
	seen := map[string]bool{}
	for i, u := range c.Upstreams {
		key := fmt.Sprintf("upstreams[%d]", i)
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

// Duration is a time.Duration written as in Go ("15s", "2m30s").
type Duration time.Duration

// UnmarshalYAML reads a duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return fmt.Errorf("line %d: want a duration such as \"15s\"", n.Line)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("line %d: want a duration such as \"15s\", got %q", n.Line, s)
	}
	*d = Duration(v)
	return nil
}

// String formats the duration as Go does.
func (d Duration) String() string { return time.Duration(d).String() }

// Read reads a YAML file over the defaults without validating it, for a
// caller that completes it (from flags) and then calls Validate.
func Read(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("reading config: %w", err)
	}
	c, err := decode(b)
	if err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

func decode(b []byte) (Config, error) {
	if err := checkFile(b); err != nil {
		return Config{}, err
	}
	c := Default()
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return Config{}, yamlError(err)
	}
	return c, nil
}

func (c *Config) validateDiscovery(bad func(string, string, ...any)) {
	d := c.Discovery
	if d.DNSName == "" {
		return
	}
	if d.Port < 1 || d.Port > 65535 {
		bad("discovery.port", "want a port from 1 to 65535, got %d", d.Port)
	}
	if d.Scheme != "http" && d.Scheme != "https" {
		bad("discovery.scheme", "must be http or https, got %q", d.Scheme)
	}
	if !strings.HasPrefix(d.Path, "/") {
		bad("discovery.path", "must start with /, got %q", d.Path)
	}
	if !strings.HasPrefix(d.SSEPath, "/") || strings.ContainsAny(d.SSEPath, "?#") {
		bad("discovery.sse_path", "must start with / and have no query or fragment, got %q", d.SSEPath)
	}
	if d.Interval < Duration(time.Second) {
		bad("discovery.interval", "must be at least 1s, got %s", d.Interval)
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

func (c *Config) validateHealthCheck(bad func(string, string, ...any)) {
	h := c.HealthCheck
	if h.Interval == 0 {
		return
	}
	if h.Interval < Duration(100*time.Millisecond) {
		bad("health_check.interval", "must be 0 (off) or at least 100ms, got %s", h.Interval)
	}
	if h.Timeout <= 0 || h.Timeout > h.Interval {
		bad("health_check.timeout", "must be positive and at most the interval, got %s", h.Timeout)
	}
	if h.Fall < 1 || h.Rise < 1 {
		bad("health_check.fall", "fall and rise must be at least 1")
	}
	if !strings.HasPrefix(h.Path, "/") {
		bad("health_check.path", "must start with /, got %q", h.Path)
	}
	if h.Mode != upstream.CheckHTTP && h.Mode != upstream.CheckMCP {
		bad("health_check.mode", "must be %s or %s, got %q", upstream.CheckHTTP, upstream.CheckMCP, h.Mode)
	}
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

func (c *Config) validateAuth(bad func(string, string, ...any)) {
	a := c.Auth
	switch {
	case a.JWKSFile != "" && a.JWKSURL != "":
		bad("auth.jwks_file", "use either auth.jwks_file or auth.jwks_url, not both")
	case !a.On() && (len(a.Issuers) > 0 || len(a.Audiences) > 0 || a.AudiencesAny || a.ResourceMetadata != ""):
		bad("auth.issuers", "verification needs auth.jwks_file or auth.jwks_url")
	case a.On() && len(a.Issuers) == 0:
		bad("auth.issuers", "name at least one accepted issuer")
	}
	c.validateTokens(bad)
	if a.ResourceMetadata != "" && !strings.HasPrefix(a.ResourceMetadata, "https://") && !strings.HasPrefix(a.ResourceMetadata, "http://") {
		bad("auth.resource_metadata", "want an https:// URL, got %q", a.ResourceMetadata)
	}
	if d := time.Duration(a.ClockSkew); d < 0 || d > 5*time.Minute {
		bad("auth.clock_skew", "must be between 0s and 5m, got %s", d)
	}
	if d := time.Duration(a.JWKSRefresh); d < 10*time.Second {
		bad("auth.jwks_refresh", "must be at least 10s, got %s", d)
	}
}

// Package config reads the gateway's YAML configuration: its schema, its
// defaults and its validation. It is the only package that reads files.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
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
	// Authz decides who may do what, after Auth (authz.go).
	Authz Authz `yaml:"authz"`
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
	// Audit writes the audit log (audit.go).
	Audit Audit `yaml:"audit"`
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
			Fall: upstream.DefaultFall, Rise: upstream.DefaultRise, Path: upstream.DefaultCheckPath, Mode: upstream.CheckAuto},
		Idempotency: "memory",
		TaskStore:   "memory",
		RedisMode:   "single",
		Limits: Limits{Store: "memory", Methods: []string{"tools/call"}, OnStoreError: "open",
			LeaseTTL: Duration(30 * time.Second), MaxCallers: 100_000},
		Authz: Authz{Default: "allow"},
		Auth: Auth{JWKSRefresh: Duration(5 * time.Minute), ClockSkew: Duration(30 * time.Second),
			MaxTokenLifetime: Duration(identity.DefaultMaxLifetime),
			TokenCacheSize:   10_000, TokenCacheTTL: Duration(time.Minute)},
		Cache: Cache{Mode: "off", TTL: Duration(time.Minute), MaxTTL: Duration(time.Hour),
			MaxBytes: 64 << 20, MaxEntryBytes: 1 << 20},
		IdempotencyLease: Duration(15 * time.Minute),
		IdempotencyTTL:   Duration(24 * time.Hour),
		Resume:           defaultResume(),
		QueueSize:        1024,
		Tools:            Tools{Refresh: Duration(30 * time.Second)},
		ServicesReady:    ServicesReadyAll,
		SSESendBuffer:    256 << 10,
		Audit:            Audit{Log: AuditOff},
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

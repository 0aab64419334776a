package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/balance"
)

func TestParseDefaultsAndOverrides(t *testing.T) {
	c, err := Parse([]byte(`
listen: 127.0.0.1:9000
upstreams:
  - name: a
    url: http://127.0.0.1:9001/mcp
  - url: http://127.0.0.1:9002/mcp
keepalive: 0s
balance: round-robin
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:9000" || c.Path != "/mcp" || c.Retries != 1 || c.MaxBodyBytes != 4<<20 || c.MaxBatch != 16 {
		t.Errorf("defaults or overrides not applied: %+v", c)
	}
	if c.KeepAlive != 0 || c.Balance != "round-robin" || c.HashEpsilon != balance.DefaultEpsilon {
		t.Errorf("keepalive %v, balance %q, epsilon %v", c.KeepAlive, c.Balance, c.HashEpsilon)
	}
	if len(c.Upstreams) != 2 || c.Upstreams[0].Name != "a" || c.Upstreams[1].URL != "http://127.0.0.1:9002/mcp" {
		t.Errorf("upstreams = %+v", c.Upstreams)
	}
}

func TestParseRejectsNamingTheKey(t *testing.T) {
	base := "upstreams:\n  - url: http://127.0.0.1:1/mcp\n"
	tests := []struct {
		name, yaml, key string
	}{
		{"unknown key", base + "listne: 127.0.0.1:1\n", "listne"},
		{"bad duration", base + "keepalive: soon\n", "soon"},
		{"negative keepalive", base + "keepalive: -1s\n", "keepalive"},
		{"bad balance", base + "balance: random\n", "balance"},
		{"no upstreams", "listen: 127.0.0.1:1\n", "upstreams"},
		{"unknown nested key", base + "health_check: {intervall: 1s}\n", "intervall"},
		{"bad upstream url", "upstreams:\n  - url: ftp://x/\n", "upstreams[0].url"},
		{"duplicate names", base + "  - url: http://127.0.0.1:1/other\n", "upstreams[1].name"},
		{"bad listen", base + "listen: nowhere\n", "listen"},
		{"tiny body bound", base + "max_body_bytes: 10\n", "max_body_bytes"},
		{"zero timeout", base + "dial_timeout: 0s\n", "dial_timeout"},
		{"bad log level", base + "log_level: loud\n", "log_level"},
		{"retries out of range", base + "retries: 99\n", "retries"},
		{"bad path", base + "path: mcp\n", "path"},
		{"proxies without header", base + "trusted_proxies: [10.0.0.0/8]\n", "trusted_proxies"},
		{"header without proxies", base + "trusted_proxy_header: X-Forwarded-For\n", "trusted_proxies"},
		{"bad proxy cidr", base + "trusted_proxies: [10.0.0.0/99]\ntrusted_proxy_header: X-Forwarded-For\n", "trusted_proxies"},
		{"negative epsilon", base + "hash_epsilon: -1\n", "hash_epsilon"},
		{"bad sessions", base + "sessions: sticky\n", "sessions"},
		{"bad idempotency", base + "idempotency: disk\n", "idempotency"},
		{"upstreams and discovery", base + "discovery: {dns_name: mcp.svc, port: 8080}\n", "discovery.dns_name"},
		{"discovery without port", "discovery: {dns_name: mcp.svc}\n", "discovery.port"},
		{"health timeout over interval", base + "health_check: {interval: 1s, timeout: 2s}\n", "health_check.timeout"},
		{"health fall zero", base + "health_check: {fall: 0}\n", "health_check.fall"},
		{"redis without url", base + "idempotency: redis\n", "redis_url"},
		{"bad redis url", base + "idempotency: redis\nredis_url: http://x\n", "redis_url: not a redis:// or rediss:// URL"},
		{"redis url and file", base + "idempotency: redis\nredis_url: redis://x:6379\nredis_url_file: /run/redis-url\n", "use either redis_url or redis_url_file, not both"},
		{"limits redis without url", base + "limits: {store: redis, rate: 5}\nsecret_file: s.yaml\n", "redis_url"},
		{"idempotency redis without a shared salt", base + "redis_url: redis://127.0.0.1:6379\nidempotency: redis\n", "idempotency: redis needs secret_file"},
		{"bad redis mode", base + "redis_mode: ring\n", "redis_mode: must be single, cluster or sentinel"},
		{"sentinel without master", base + "redis_mode: sentinel\n", "redis_sentinel_master: required with redis_mode sentinel"},
		{"master without sentinel", base + "redis_mode: cluster\nredis_sentinel_master: mymaster\n", "redis_sentinel_master: only with redis_mode sentinel"},
		{"limits redis without a shared salt", base + "redis_url: redis://127.0.0.1:6379\nlimits: {store: redis, rate: 5}\n", "limits.store"},
		{"task store redis without url", base + "task_store: redis\n", "redis_url"},
		{"task store unknown", base + "task_store: disk\n", "task_store"},
		{"limits store unknown", base + "limits: {store: etcd}\n", "limits.store"},
		{"limits negative rate", base + "limits: {rate: -1}\n", "limits.rate"},
		{"limits burst without rate", base + "limits: {burst: 3}\n", "limits.burst"},
		{"limits negative concurrency", base + "limits: {concurrency: -2}\n", "limits.concurrency"},
		{"limits tool cap zero", base + "limits: {tools: {work: 0}}\n", "limits.tools"},
		{"limits on_store_error", base + "limits: {on_store_error: maybe}\n", "limits.on_store_error"},
		{"limits lease ttl short", base + "limits: {lease_ttl: 10ms}\n", "limits.lease_ttl"},
		{"limits govern a notification", base + "limits: {methods: [notifications/cancelled]}\n", "limits.methods"},
		{"limits negative sessions", base + "limits: {sessions: -1}\n", "limits.sessions"},
		{"limits negative per address", base + "limits: {per_address: -0.5}\n", "limits.per_address"},
		{"zero max batch", base + "max_batch: 0\n", "max_batch"},
		{"huge max batch", base + "max_batch: 10000\n", "max_batch"},
		{"limits unknown key", base + "limits: {rps: 5}\n", "rps"},
		{"auth without issuers", base + "auth: {jwks_file: k.json}\n", "auth.issuers"},
		{"auth issuers without keys", base + "auth: {issuers: [i]}\n", "auth.issuers"},
		{"auth two key sources", base + "auth: {jwks_file: k.json, jwks_url: 'https://x/jwks', issuers: [i]}\n", "auth.jwks_file"},
		{"auth bad jwks url", base + "auth: {jwks_url: 'ftp://x', issuers: [i]}\n", "auth.jwks_url"},
		{"auth skew", base + "auth: {jwks_file: k.json, issuers: [i], clock_skew: 1h}\n", "auth.clock_skew"},
		{"auth token cache negative", base + "auth: {jwks_file: k.json, issuers: [i], token_cache_size: -1}\n", "auth.token_cache_size"},
		{"auth token cache huge", base + "auth: {jwks_file: k.json, issuers: [i], token_cache_size: 2000000}\n", "auth.token_cache_size"},
		{"auth token cache ttl long", base + "auth: {jwks_file: k.json, issuers: [i], token_cache_ttl: 2h}\n", "auth.token_cache_ttl"},
		{"passthrough the MCP path", base + "passthrough_paths: [/mcp]\n", "passthrough_paths"},
		{"passthrough without slash", base + "passthrough_paths: [token]\n", "passthrough_paths"},
		{"health mode unknown", base + "health_check: {mode: tcp}\n", "health_check.mode"},
		{"cache mode unknown", base + "cache: {mode: disk}\n", "cache.mode"},
		{"cache shared without url", base + "secret_file: s.yaml\ncache: {mode: shared}\n", "redis_url"},
		{"cache shared without a shared salt", base + "redis_url: redis://127.0.0.1:6379\ncache: {mode: shared}\n", "cache.mode"},
		{"cache ttl over max", base + "cache: {mode: local, ttl: 2h, max_ttl: 1h}\n", "cache.ttl"},
		{"cache entry bound small", base + "cache: {mode: local, max_entry_bytes: 10}\n", "cache.max_entry_bytes"},
		{"cache empty tool", base + "cache: {mode: local, tools: [\"\"]}\n", "cache.tools"},
		{"sse_path without slash", base + "sse_path: sse\n", "sse_path"},
		{"sse_path the MCP path", base + "sse_path: /mcp\n", "sse_path"},
		{"sse_path /healthz", base + "sse_path: /healthz\n", "sse_path"},
		{"sse_path with a query", base + "sse_path: /sse?x=1\n", "sse_path"},
		{"sse messages path /readyz", base + "sse_messages_path: /readyz\n", "sse_messages_path"},
		{"sse messages path empty", base + "sse_messages_path: \"\"\n", "sse_messages_path"},
		{"sse paths the same", base + "sse_path: /x\nsse_messages_path: /x\n", "sse_messages_path"},
		{"sse_path passed through", base + "passthrough_paths: [/sse]\n", "sse_path"},
		{"sse messages path under a passthrough prefix", base + "passthrough_paths: [/oauth/]\nsse_messages_path: /oauth/messages\n", "sse_messages_path"},
		{"bad sse_url", "upstreams:\n  - url: http://127.0.0.1:1/mcp\n    sse_url: ftp://x/sse\n", "upstreams[0].sse_url"},
		{"sse_url with a query", "upstreams:\n  - url: http://127.0.0.1:1/mcp\n    sse_url: http://x/sse?k=1\n", "upstreams[0].sse_url"},
		{"discovery sse_path", "discovery: {dns_name: mcp.svc, port: 1, sse_path: sse}\n", "discovery.sse_path"},
		{"otlp endpoint not a url", base + "telemetry: {otlp_endpoint: \"127.0.0.1:4318\"}\n", "telemetry.otlp_endpoint"},
		{"otlp endpoint with credentials", base + "telemetry: {otlp_endpoint: \"http://u:p@127.0.0.1:4318\"}\n", "telemetry.otlp_endpoint"},
		{"otlp protocol", base + "telemetry: {protocol: http/json}\n", "telemetry.protocol"},
		{"sample ratio over 1", base + "telemetry: {sample_ratio: 1.5}\n", "telemetry.sample_ratio"},
		{"negative sample ratio", base + "telemetry: {sample_ratio: -0.1}\n", "telemetry.sample_ratio"},
		{"unknown telemetry key", base + "telemetry: {endpoint: http://x}\n", "endpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.key) {
				t.Errorf("Parse error = %v, want one naming %q", err, tt.key)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(p, []byte("upstreams: [{url: 'http://127.0.0.1:1/mcp'}]\ngrace: 2s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(p)
	if err != nil || time.Duration(c.Grace) != 2*time.Second {
		t.Fatalf("Load = %+v, %v", c, err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Error("Load of a missing file succeeded")
	}
}

// TestExampleConfigIsValid keeps the documented example loadable.
func TestExampleConfigIsValid(t *testing.T) {
	if _, err := Load("../../docs/mcpfleet.example.yaml"); err != nil {
		t.Fatal(err)
	}
}

func TestLimitsKeys(t *testing.T) {
	c, err := Parse([]byte(`upstreams: [{url: "http://127.0.0.1:9001/mcp"}]
redis_url: redis://127.0.0.1:6379/0
secret_file: secret.yaml
task_store: redis
limits:
  store: redis
  rate: 5
  burst: 5
  concurrency: 2
  tools: {work: 3}
  methods: [tools/call, resources/read]
  on_store_error: closed
  lease_ttl: 3s
`))
	if err != nil {
		t.Fatal(err)
	}
	l := c.Limits
	if l.Rate != 5 || l.Burst != 5 || l.Concurrency != 2 || l.Tools["work"] != 3 || l.OnStoreError != "closed" ||
		l.LeaseTTL != Duration(3*time.Second) || len(l.Methods) != 2 || l.Methods[1] != "resources/read" {
		t.Fatalf("limits = %+v", l)
	}
	if c.Limits.Store != "redis" || c.TaskStore != "redis" {
		t.Fatalf("stores = %q, %q", c.Limits.Store, c.TaskStore)
	}
	d := Default()
	d.Upstreams = []Upstream{{URL: "http://127.0.0.1:9001/mcp"}}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	if d.Limits.OnStoreError != "open" || d.Limits.LeaseTTL != Duration(30*time.Second) || d.Limits.Methods[0] != "tools/call" {
		t.Fatalf("limit defaults = %+v", d.Limits)
	}
}

func TestCacheKeys(t *testing.T) {
	c, err := Parse([]byte(`upstreams: [{url: "http://127.0.0.1:9001/mcp"}]
redis_url: redis://127.0.0.1:6379/0
secret_file: secret.yaml
cache:
  mode: shared
  tools: [lookup]
  ttl: 30s
`))
	if err != nil {
		t.Fatal(err)
	}
	if k := c.Cache; k.Mode != "shared" || len(k.Tools) != 1 || k.Tools[0] != "lookup" || k.TTL != Duration(30*time.Second) || k.MaxTTL != Duration(time.Hour) {
		t.Fatalf("cache = %+v", k)
	}
	if d := Default(); d.Cache.Mode != "off" || d.Cache.MaxBytes != 64<<20 {
		t.Fatalf("cache defaults = %+v", d.Cache)
	}
}

// TestRedisURLFile checks that redis_url_file stands for redis_url for every
// store set to redis, that a store without either names both keys, and that
// a URL given as the file's path is refused without being quoted.
func TestRedisURLFile(t *testing.T) {
	base := "upstreams: [{url: 'http://127.0.0.1:1/mcp'}]\nsecret_file: s.yaml\n"
	for _, store := range []string{"idempotency: redis", "task_store: redis", "limits: {store: redis, rate: 5}", "cache: {mode: shared}"} {
		t.Run(store, func(t *testing.T) {
			c, err := Parse([]byte(base + store + "\nredis_url_file: /run/mcpfleet/redis-url\n"))
			if err != nil || c.RedisURLFile != "/run/mcpfleet/redis-url" || c.RedisURL != "" {
				t.Errorf("Parse = %q, %q, %v; want the file alone", c.RedisURLFile, c.RedisURL, err)
			}
			_, err = Parse([]byte(base + store + "\n"))
			if err == nil || !strings.Contains(err.Error(), "redis_url or redis_url_file: required when") {
				t.Errorf("without either key: %v, want an error naming both", err)
			}
		})
	}
	_, err := Parse([]byte(base + "idempotency: redis\nredis_url_file: 'redis://:hunter2@valkey:6379/0'\n"))
	if err == nil || !strings.Contains(err.Error(), "redis_url_file: want the path of a file") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("a URL as redis_url_file: %v, want it refused and not quoted", err)
	}
}

func TestCheckSecretFile(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		name string
		mode os.FileMode // 0: no file
		want string      // "" accepted
	}{
		{"private", 0o600, ""},
		{"others may read", 0o644, "readable by others"},
		{"missing", 0, "no such file or directory"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, tt.name)
			if tt.mode != 0 {
				if err := os.WriteFile(p, []byte("x"), tt.mode); err != nil {
					t.Fatal(err)
				}
				os.Chmod(p, tt.mode)
			}
			err := CheckSecretFile(p)
			if (tt.want == "") != (err == nil) || (err != nil && (!strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), p))) {
				t.Errorf("CheckSecretFile = %v, want %q and no path", err, tt.want)
			}
		})
	}
}

func TestCapacityKeys(t *testing.T) {
	base := "upstreams:\n  - {name: a, url: 'http://127.0.0.1:1/mcp', max_inflight: 2, max_connections: 100}\n"
	c, err := Parse([]byte(base + "queue_timeout: 2s\nqueue_size: 50\ngateways: 3\nupstream_pool_size: 32\n"))
	if err != nil {
		t.Fatal(err)
	}
	if u := c.Upstreams[0]; u.MaxInflight != 2 || u.MaxConnections != 100 || time.Duration(c.QueueTimeout) != 2*time.Second || c.QueueSize != 50 {
		t.Errorf("parsed %+v, queue %v/%d", u, c.QueueTimeout, c.QueueSize)
	}
	if d := Default(); d.QueueTimeout != 0 || d.QueueSize != 1024 || d.UpstreamPoolSize != 0 || d.Gateways != 0 {
		t.Errorf("defaults: queue_timeout %v, queue_size %d, upstream_pool_size %d, gateways %d", d.QueueTimeout, d.QueueSize, d.UpstreamPoolSize, d.Gateways)
	}
	for _, tt := range []struct{ name, yaml, want string }{
		{"pool unbounded", base + "gateways: 3\n", "upstreams[0].max_connections: 100 connections, but each of the 3 gateways may open any number (upstream_pool_size 0: no bound); set upstream_pool_size to 32 or less"},
		{"pool too large", base + "gateways: 3\nupstream_pool_size: 33\n", "3 gateways × (upstream_pool_size 33 + 1 for health checks) = 102 could be open; set upstream_pool_size to 32 or less"},
		{"pool too large without checks", base + "gateways: 4\nupstream_pool_size: 26\nhealth_check: {interval: 0s}\n", "4 gateways × (upstream_pool_size 26 + 0 for health checks) = 104 could be open; set upstream_pool_size to 25 or less"},
		{"budget below the gateways", base + "gateways: 60\nupstream_pool_size: 1\n", "100 connections cannot serve 60 gateways: each needs at least 2"},
		{"queue without a cap", "upstreams:\n  - url: 'http://127.0.0.1:1/mcp'\nqueue_timeout: 1s\n", "queue_timeout: has no effect without max_inflight"},
		{"negative cap", "upstreams:\n  - {url: 'http://127.0.0.1:1/mcp', max_inflight: -1}\n", "upstreams[0].max_inflight: must not be negative"},
		{"queue size zero", base + "queue_size: 0\n", "queue_size: must be between 1"},
		{"discovered pool", "discovery: {dns_name: mcp.svc, port: 8080, max_connections: 10}\ngateways: 2\nupstream_pool_size: 5\n", "discovery.max_connections: 10 connections, but 2 gateways × (upstream_pool_size 5 + 1 for health checks) = 12"},
	} {
		_, err := Parse([]byte(tt.yaml))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want it to say %q", tt.name, err, tt.want)
		}
	}
	// Without gateways (or max_connections) nothing is checked.
	if _, err := Parse([]byte(base)); err != nil {
		t.Errorf("no gateways given: %v", err)
	}
	if _, err := Parse([]byte(base + "gateways: 3\nupstream_pool_size: 32\n")); err != nil {
		t.Errorf("3 × (32+1) = 99 of 100: %v", err)
	}
}

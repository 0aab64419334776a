package main

import (
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/balance"
	"github.com/mcpfleet/mcpfleet/internal/config"
)

// TestOptionsFromConfig: what a configuration says reaches the options of
// the parts it configures, with "0 means off" turned into their spelling.
func TestOptionsFromConfig(t *testing.T) {
	c, err := config.Parse([]byte(`
upstreams:
  - name: a
    url: http://127.0.0.1:9001/mcp
  - url: http://127.0.0.1:9002/mcp
keepalive: 0s
retries: 0
balance: round-robin
redis_url: redis://127.0.0.1:6379/0
secret_file: secret.yaml
limits:
  store: redis
  rate: 5
  burst: 5
  concurrency: 2
  tools: {work: 3}
  methods: [tools/call, resources/read]
  on_store_error: closed
  lease_ttl: 3s
  sessions: 10
  per_address: 2.5
max_batch: 8
cache:
  mode: shared
  tools: [lookup]
  ttl: 30s
`))
	if err != nil {
		t.Fatal(err)
	}
	o := baseGatewayOptions(&c)
	if o.KeepAlive >= 0 || o.Retries >= 0 {
		t.Errorf("keepalive 0s and retries 0 should be off: %v, %v", o.KeepAlive, o.Retries)
	}
	if o.Balance != balance.RoundRobin || o.HashEpsilon != balance.DefaultEpsilon || o.MaxBatch != 8 {
		t.Errorf("balance %v, epsilon %v, max batch %d", o.Balance, o.HashEpsilon, o.MaxBatch)
	}
	if s := upstreamSpecs(&c); len(s) != 2 || s[0].Name != "a" || s[1].URL != "http://127.0.0.1:9002/mcp" {
		t.Errorf("specs = %+v", s)
	}
	l := limitOptions(&c, nil)
	if l == nil || l.Rate != 5 || l.Burst != 5 || l.Concurrency != 2 || l.Tools["work"] != 3 || !l.FailClosed ||
		l.LeaseTTL != 3*time.Second || len(l.Methods) != 2 || l.Methods[1] != "resources/read" || l.Sessions != 10 || l.PerAddress != 2.5 {
		t.Fatalf("limit options = %+v", l)
	}
	r := cacheRules(&c)
	if !r.Tools["lookup"] || r.ToolTTL != 30*time.Second || r.MaxTTL != time.Hour {
		t.Fatalf("cache rules %+v", r)
	}
	if _, _, on := verifyOptions(&c); on {
		t.Error("verification on without a JWKS")
	}

	d := config.Default()
	d.Upstreams = []config.Upstream{{URL: "http://127.0.0.1:9001/mcp"}}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	if limitOptions(&d, nil) != nil {
		t.Error("no limit configured, yet limit options")
	}
	d.Limits.Sessions = 5
	if l := limitOptions(&d, nil); l == nil || l.Sessions != 5 {
		t.Errorf("limits.sessions alone: limit options %+v, want sessions 5", l)
	}
	d.Limits.Sessions = 0
	if discoverOptions(&d, nil) != nil {
		t.Error("no discovery configured, yet discovery options")
	}
	if co := checkOptions(&d, nil, nil); co == nil || co.Interval != 2*time.Second {
		t.Errorf("default health checks: %+v", co)
	}
	if o, err := gatewayOptions(&d); err != nil || o.Keyring != nil || o.KeepAlive != 15*time.Second {
		t.Errorf("defaults without a secret file: %+v, %v", o, err)
	}
	if o := baseGatewayOptions(&d); o.NoSessionBinding || o.SessionMaxAge != 24*time.Hour {
		t.Errorf("default binding: off %v, max age %v", o.NoSessionBinding, o.SessionMaxAge)
	}
	d.SessionBinding, d.SessionMaxAge = config.SessionBindingNone, 0
	if o := baseGatewayOptions(&d); !o.NoSessionBinding || o.SessionMaxAge >= 0 {
		t.Errorf("session_binding none, session_max_age 0s: off %v, max age %v", o.NoSessionBinding, o.SessionMaxAge)
	}
}

// TestSSEOptionsFromConfig: the 2024-11-05 transport's keys reach the
// gateway, the fleet and discovery; sse_path "" turns it off.
func TestSSEOptionsFromConfig(t *testing.T) {
	c, err := config.Parse([]byte("upstreams:\n  - url: http://127.0.0.1:9001/mcp\n    sse_url: http://127.0.0.1:9002/events\nsse_path: /v1/sse\nsse_messages_path: /v1/messages\n"))
	if err != nil {
		t.Fatal(err)
	}
	if o := baseGatewayOptions(&c); o.SSEPath != "/v1/sse" || o.SSEMessagesPath != "/v1/messages" || o.NoSSE {
		t.Errorf("gateway options: %q, %q, off %v", o.SSEPath, o.SSEMessagesPath, o.NoSSE)
	}
	if s := upstreamSpecs(&c); s[0].SSEURL != "http://127.0.0.1:9002/events" {
		t.Errorf("specs = %+v", s)
	}
	c.SSEPath = ""
	if o := baseGatewayOptions(&c); !o.NoSSE {
		t.Error("sse_path \"\" left the transport on")
	}
	d, err := config.Parse([]byte("discovery: {dns_name: mcp.svc, port: 3001, sse_path: /v1/sse}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if o := discoverOptions(&d, nil); o == nil || o.SSEPath != "/v1/sse" {
		t.Errorf("discovery options: %+v", o)
	}
}

func TestGCPercentFor(t *testing.T) {
	for _, tt := range []struct {
		live      uint64
		was, want int
	}{
		{1 << 20, gcPercent, gcPercent},
		{40 << 20, gcPercent, 100},
		{20 << 20, 100, 100}, // between: stays
		{20 << 20, gcPercent, gcPercent},
		{15 << 20, 100, gcPercent},
		{100 << 20, 100, 50},
		{100 << 20, gcPercent, 50},
		{60 << 20, 50, 50}, // over half of 96 MiB: stays
		{40 << 20, 50, 100},
		{10 << 20, 50, gcPercent},
	} {
		if got := gcPercentFor(tt.live, tt.was); got != tt.want {
			t.Errorf("live %d MiB from %d: %d, want %d", tt.live>>20, tt.was, got, tt.want)
		}
	}
}

// TestVerifyOptionsTokenRules: auth.max_token_lifetime reaches the
// verifier (0, no bound, as a negative bound; unset, a day) and so does
// auth.audiences_any.
func TestVerifyOptionsTokenRules(t *testing.T) {
	for _, tt := range []struct {
		yaml string
		want time.Duration
	}{
		{"", 24 * time.Hour},
		{", max_token_lifetime: 1h", time.Hour},
		{", max_token_lifetime: 0s", -1},
	} {
		c, err := config.Parse([]byte("upstreams: [{url: 'http://127.0.0.1:1/mcp'}]\nauth: {jwks_file: k.json, issuers: [i], audiences_any: true" + tt.yaml + "}\n"))
		if err != nil {
			t.Fatal(err)
		}
		o, _, on := verifyOptions(&c)
		if !on || o.MaxLifetime != tt.want || !o.AudiencesAny {
			t.Errorf("%q: verify options %+v, want MaxLifetime %s and AudiencesAny", tt.yaml, o, tt.want)
		}
	}
	// auth.clock_skew: 0 is no leeway at all, which the verifier's own
	// zero (its default) is not.
	for yaml, want := range map[string]time.Duration{"": 30 * time.Second, ", clock_skew: 5s": 5 * time.Second, ", clock_skew: 0s": -1} {
		c, err := config.Parse([]byte("upstreams: [{url: 'http://127.0.0.1:1/mcp'}]\nauth: {jwks_file: k.json, issuers: [i], audiences_any: true" + yaml + "}\n"))
		if err != nil {
			t.Fatal(err)
		}
		if o, _, _ := verifyOptions(&c); o.ClockSkew != want {
			t.Errorf("%q: ClockSkew %s, want %s", yaml, o.ClockSkew, want)
		}
	}
	// The verified-token cache: on by default, sized and bounded by its keys.
	for _, tt := range []struct {
		yaml string
		size int
		ttl  time.Duration
	}{
		{"", 10_000, time.Minute},
		{", token_cache_size: 50, token_cache_ttl: 10s", 50, 10 * time.Second},
		{", token_cache_size: 0", 0, time.Minute},
		{", token_cache_ttl: 0s", 10_000, 0},
	} {
		c, err := config.Parse([]byte("upstreams: [{url: 'http://127.0.0.1:1/mcp'}]\nauth: {jwks_file: k.json, issuers: [i], audiences_any: true" + tt.yaml + "}\n"))
		if err != nil {
			t.Fatal(err)
		}
		if o, _, _ := verifyOptions(&c); o.CacheSize != tt.size || o.CacheTTL != tt.ttl {
			t.Errorf("%q: cache %d for %s, want %d for %s", tt.yaml, o.CacheSize, o.CacheTTL, tt.size, tt.ttl)
		}
	}
}

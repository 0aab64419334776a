package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/balance"
	"github.com/mcpfleet/mcpfleet/internal/cache"
	"github.com/mcpfleet/mcpfleet/internal/config"
	"github.com/mcpfleet/mcpfleet/internal/gateway"
	"github.com/mcpfleet/mcpfleet/internal/identity"
	"github.com/mcpfleet/mcpfleet/internal/limit"
	"github.com/mcpfleet/mcpfleet/internal/session"
	"github.com/mcpfleet/mcpfleet/internal/streams"
	"github.com/mcpfleet/mcpfleet/internal/tools"
	"github.com/mcpfleet/mcpfleet/internal/tools/listing"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// This file is where a validated configuration (internal/config: schema,
// defaults and validation only) becomes the options of what it configures.

// gatewayOptions turns a validated configuration into the gateway's options,
// reading the secret file if one is named. Without one the gateway makes
// random keys. The stores (idempotency, limits, tasks) are built in
// stores.go.
func gatewayOptions(c *config.Config) (*gateway.Options, error) {
	o := baseGatewayOptions(c)
	withTelemetry(o)
	o.NoIdempotency = c.Idempotency == "off"
	to, err := toolOptions(c)
	if err != nil {
		return nil, err
	}
	o.Tools = to
	if o.Authz, err = authzPolicy(c); err != nil {
		return nil, err
	}
	if len(c.TrustedProxies) > 0 {
		p, err := identity.NewProxies(c.TrustedProxies, c.TrustedProxyHeader)
		if err != nil {
			return nil, fmt.Errorf("trusted_proxies: %w", err)
		}
		o.Proxies = p
	}
	if c.SecretFile == "" {
		return o, nil
	}
	sec, err := config.ReadSecret(c.SecretFile)
	if err != nil {
		return nil, err
	}
	if o.Keyring, err = session.NewKeyring(sec.Keys); err != nil {
		return nil, fmt.Errorf("secret file %s: %w", c.SecretFile, err)
	}
	o.RoutingSalt = sec.Salt
	return o, nil
}

func baseGatewayOptions(c *config.Config) *gateway.Options {
	p, _ := balance.ParsePolicy(c.Balance) // validated
	keep := time.Duration(c.KeepAlive)
	if keep == 0 {
		keep = -1 // off
	}
	eps := c.HashEpsilon
	if eps == 0 {
		eps = -1 // off
	}
	minLoad := c.HashMinLoad
	if minLoad == 0 {
		minLoad = -1 // no floor
	}
	retries := c.Retries
	if retries == 0 {
		retries = -1 // never
	}
	maxAge := time.Duration(c.SessionMaxAge)
	if maxAge == 0 {
		maxAge = -1 // never by age
	}
	return &gateway.Options{
		MaxInflight:          maxInflight(c),
		DefaultMaxInflight:   c.Discovery.MaxInflight,
		QueueTimeout:         time.Duration(c.QueueTimeout),
		QueueSize:            c.QueueSize,
		UpstreamPoolSize:     c.UpstreamPoolSize,
		Path:                 c.Path,
		Balance:              p,
		HashEpsilon:          eps,
		IdempotencyLease:     time.Duration(c.IdempotencyLease),
		IdempotencyTTL:       time.Duration(c.IdempotencyTTL),
		HashMinLoad:          minLoad,
		SharedSessions:       c.Sessions == config.SessionsShared,
		NoSessionBinding:     c.SessionBinding == config.SessionBindingNone,
		SessionMaxAge:        maxAge,
		KeepAlive:            keep,
		MaxBodyBytes:         c.MaxBodyBytes,
		MaxBatch:             c.MaxBatch,
		MaxEventBytes:        c.MaxEventBytes,
		BodyReadTimeout:      time.Duration(c.BodyReadTimeout),
		WriteTimeout:         time.Duration(c.WriteTimeout),
		Retries:              retries,
		DialTimeout:          time.Duration(c.DialTimeout),
		HealthCheckInterval:  time.Duration(c.HealthCheck.Interval),
		HealthCheckTimeout:   time.Duration(c.HealthCheck.Timeout),
		AllowAnyHost:         c.AllowAnyHost,
		AllowedHosts:         c.AllowedHosts,
		AllowedOrigins:       c.AllowedOrigins,
		PassthroughPaths:     c.PassthroughPaths,
		AuthResourceMetadata: c.Auth.ResourceMetadata,
		AuthResource:         c.Auth.Resource,
		AuthorizationServers: authorizationServers(&c.Auth),
		AuthScopesSupported:  c.Auth.ScopesSupported,
		SSEPath:              c.SSEPath,
		SSEMessagesPath:      c.SSEMessagesPath,
		NoSSE:                c.SSEPath == "", // off
		StreamLimits: streams.Options{TTL: time.Duration(c.Resume.Grace),
			MaxStreamBytes: c.Resume.MaxStreamBytes, MaxTotalBytes: c.Resume.MaxTotalBytes},
	}
}

// maxInflight returns the upstreams' max_inflight by replica name; nil
// when none has one.
func maxInflight(c *config.Config) map[string]int {
	var caps map[string]int
	for _, u := range c.Upstreams {
		if u.MaxInflight == 0 {
			continue
		}
		if caps == nil {
			caps = map[string]int{}
		}
		name := u.Name
		if name == "" {
			parsed, _ := upstream.ParseURL(u.URL) // validated
			name = parsed.Host
		}
		caps[name] = u.MaxInflight
	}
	return caps
}

// upstreamSpecs returns the upstreams as the fleet takes them.
func upstreamSpecs(c *config.Config) []upstream.Spec {
	specs := make([]upstream.Spec, 0, len(c.Upstreams))
	for i, u := range c.Upstreams {
		if u.IsStdio() {
			specs = append(specs, stdioSpecs(&c.Upstreams[i])...)
			continue
		}
		specs = append(specs, upstream.Spec{Name: u.Name, URL: u.URL, SSEURL: u.SSEURL})
	}
	return specs
}

// logLevel returns the configured log level.
func logLevel(c *config.Config) slog.Level {
	var l slog.Level
	_ = l.UnmarshalText([]byte(c.LogLevel)) // validated
	return l
}

// checkOptions returns the health checker's options, or nil when active
// checks are off.
func checkOptions(c *config.Config, onChange func(string, upstream.State, upstream.State), log *slog.Logger) *upstream.CheckOptions {
	h := c.HealthCheck
	if h.Interval == 0 {
		return nil
	}
	return &upstream.CheckOptions{
		Interval: time.Duration(h.Interval), Timeout: time.Duration(h.Timeout),
		Fall: h.Fall, Rise: h.Rise, Path: h.Path, Host: h.Host, Mode: h.Mode,
		OnChange: onChange, Logger: log,
	}
}

// discoverOptions returns the DNS discoverer's options, or nil when the
// replicas are a static list.
func discoverOptions(c *config.Config, log *slog.Logger) *upstream.DiscoverOptions {
	d := c.Discovery
	if d.DNSName == "" {
		return nil
	}
	return &upstream.DiscoverOptions{
		Name: d.DNSName, Port: d.Port, Scheme: d.Scheme, Path: d.Path, SSEPath: d.SSEPath,
		Interval: time.Duration(d.Interval), Logger: log,
	}
}

// limitOptions returns the admission step's options, or nil when no limit
// is configured.
func limitOptions(c *config.Config, log *slog.Logger) *limit.Options {
	l := c.Limits
	if l.Rate == 0 && l.Concurrency == 0 && len(l.Tools) == 0 && l.Sessions == 0 && l.PerAddress == 0 {
		return nil
	}
	return &limit.Options{
		Rate: l.Rate, Burst: l.Burst, Concurrency: l.Concurrency, Tools: l.Tools,
		Methods: l.Methods, Sessions: l.Sessions, PerAddress: l.PerAddress, LeaseTTL: time.Duration(l.LeaseTTL),
		FailClosed: l.OnStoreError == "closed", Log: log,
	}
}

// cacheRules returns the cache step's rules.
func cacheRules(c *config.Config) cache.Rules {
	tools := make(map[string]bool, len(c.Cache.Tools))
	for _, t := range c.Cache.Tools {
		tools[t] = true
	}
	return cache.Rules{Tools: tools, ToolTTL: time.Duration(c.Cache.TTL), MaxTTL: time.Duration(c.Cache.MaxTTL)}
}

// authorizationServers are what the protected resource metadata names:
// auth.authorization_servers, else the accepted issuers (an issuer is its
// authorization server's identifier, RFC 8414 section 2).
func authorizationServers(a *config.Auth) []string {
	if len(a.AuthorizationServers) > 0 {
		return a.AuthorizationServers
	}
	return a.Issuers
}

// verifyOptions returns the token verifier's options and its key source,
// or false when verification is off.
func verifyOptions(c *config.Config) (identity.VerifyOptions, identity.KeySource, bool) {
	a := c.Auth
	if !a.On() {
		return identity.VerifyOptions{}, identity.KeySource{}, false
	}
	lifetime := time.Duration(a.MaxTokenLifetime)
	if lifetime == 0 {
		lifetime = -1 // auth.max_token_lifetime: 0 turns the bound off
	}
	skew := time.Duration(a.ClockSkew)
	if skew == 0 {
		skew = -1 // auth.clock_skew: 0 is no leeway, not the default
	}
	return identity.VerifyOptions{Issuers: a.Issuers, Audiences: a.Audiences, AudiencesAny: a.AudiencesAny,
			ClockSkew: skew, MaxLifetime: lifetime, KeepClaims: c.Authz.On(),
			CacheSize: a.TokenCacheSize, CacheTTL: time.Duration(a.TokenCacheTTL)},
		identity.KeySource{File: a.JWKSFile, URL: a.JWKSURL, Refresh: time.Duration(a.JWKSRefresh)}, true
}

// toolOptions returns the tools watcher's options, or nil when
// tools.refresh is 0s: the lock read and parsed, the probe's credential
// read on the secret file's terms. No error quotes the credential.
func toolOptions(c *config.Config) (*gateway.ToolOptions, error) {
	t := c.Tools
	if t.Refresh == 0 {
		return nil, nil
	}
	o := &gateway.ToolOptions{Refresh: time.Duration(t.Refresh), Quarantine: t.OnUnlocked == "quarantine"}
	if t.LockFile != "" {
		b, err := os.ReadFile(t.LockFile)
		if err != nil {
			return nil, fmt.Errorf("tools.lock_file: %w", err)
		}
		if o.Lock, err = tools.ParseLock(b); err != nil {
			return nil, fmt.Errorf("tools.lock_file %s: %w", t.LockFile, err)
		}
	}
	auth, err := readAuthorization("tools.probe_authorization_file", t.ProbeAuthorizationFile)
	if err != nil {
		return nil, err
	}
	o.List = toolLister(auth, nil)
	return o, nil
}

// toolLister lists a replica's tools with auth, through client (nil: the
// listing's own).
func toolLister(auth string, client *http.Client) func(ctx context.Context, url string) ([]tools.Definition, string, error) {
	return func(ctx context.Context, url string) ([]tools.Definition, string, error) {
		return listing.List(ctx, url, listing.ListOptions{Authorization: auth, Client: client})
	}
}

package config

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/identity"
)

// validateTokens checks what makes a verified token worth believing: an
// audience, a bounded lifetime, keys that came over https.
func (c *Config) validateTokens(bad func(string, string, ...any)) {
	a := c.Auth
	// With services, each is checked as resolved: one may name its own
	// audiences under a top level that names none.
	if a.On() && len(a.Audiences) == 0 && !a.AudiencesAny && len(c.Services) == 0 {
		bad("auth.audiences", "empty: a token minted for any other resource would be accepted here, "+
			"the confused deputy RFC 8707 and the MCP authorization spec (token audience binding and validation) warn of; "+
			"name this server's resource URI, e.g. [https://mcp.example.com/mcp], or set auth.audiences_any: true to accept any audience on purpose")
	}
	if d := time.Duration(a.MaxTokenLifetime); d < 0 {
		bad("auth.max_token_lifetime", "must not be negative (0 turns the bound off), got %s", d)
	}
	if a.JWKSURL != "" {
		if err := identity.CheckKeyURL(a.JWKSURL); err != nil {
			bad("auth.jwks_url", "%v", err)
		}
	}
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
	// TokenCacheSize and TokenCacheTTL bound the verified-token cache: at
	// most this many tokens, each answered without a signature check for
	// at most this long after it verified. Either 0 turns it off.
	TokenCacheSize int      `yaml:"token_cache_size"`
	TokenCacheTTL  Duration `yaml:"token_cache_ttl"`
	// ResourceMetadata is the URL a 401's challenge names; "" means the
	// well-known URL at the origin the client used.
	ResourceMetadata string `yaml:"resource_metadata"`
	// Resource is the protected resource's identifier in the metadata the
	// gateway serves (RFC 9728); "" means the listener's scheme, the
	// request's Host (one the Host guard took) and path.
	Resource string `yaml:"resource"`
	// AuthorizationServers are that metadata's authorization_servers;
	// none means Issuers.
	AuthorizationServers []string `yaml:"authorization_servers"`
	// ScopesSupported are that metadata's scopes_supported, and the scope
	// a 401's challenge asks for; none leaves both out.
	ScopesSupported []string `yaml:"scopes_supported"`
}

// maxTokenCache bounds auth.token_cache_size: a verified token's entry is
// some hundreds of bytes, its claims more with authz rules.
const maxTokenCache = 1_000_000

// On reports whether verification is configured.
func (a Auth) On() bool { return a.JWKSFile != "" || a.JWKSURL != "" }

func (c *Config) validateAuth(bad func(string, string, ...any)) {
	a := c.Auth
	switch {
	case a.JWKSFile != "" && a.JWKSURL != "":
		bad("auth.jwks_file", "use either auth.jwks_file or auth.jwks_url, not both")
	case !a.On() && (len(a.Issuers) > 0 || len(a.Audiences) > 0 || a.AudiencesAny || a.ResourceMetadata != "" ||
		a.Resource != "" || len(a.AuthorizationServers) > 0 || len(a.ScopesSupported) > 0):
		bad("auth.issuers", "verification needs auth.jwks_file or auth.jwks_url")
	case a.On() && len(a.Issuers) == 0:
		bad("auth.issuers", "name at least one accepted issuer")
	}
	c.validateTokens(bad)
	if a.ResourceMetadata != "" && !strings.HasPrefix(a.ResourceMetadata, "https://") && !strings.HasPrefix(a.ResourceMetadata, "http://") {
		bad("auth.resource_metadata", "want an https:// URL, got %q", a.ResourceMetadata)
	}
	a.validateMetadata(bad)
	if d := time.Duration(a.ClockSkew); d < 0 || d > 5*time.Minute {
		bad("auth.clock_skew", "must be between 0s and 5m, got %s", d)
	}
	if a.TokenCacheSize < 0 || a.TokenCacheSize > maxTokenCache {
		bad("auth.token_cache_size", "must be between 0 (no cache) and %d, got %d", maxTokenCache, a.TokenCacheSize)
	}
	if d := time.Duration(a.TokenCacheTTL); d < 0 || d > time.Hour {
		bad("auth.token_cache_ttl", "must be between 0s (no cache) and 1h, got %s", d)
	}
	if d := time.Duration(a.JWKSRefresh); d < 10*time.Second {
		bad("auth.jwks_refresh", "must be at least 10s, got %s", d)
	}
}

// validateMetadata checks what the protected resource metadata names: a
// resource identifier and authorization servers that are absolute http(s)
// URLs without a fragment (RFC 9728 section 1.2, RFC 8414 section 2), and
// scopes that are scope-tokens (RFC 6749 section 3.3).
func (a Auth) validateMetadata(bad func(string, string, ...any)) {
	if a.Resource != "" && !metadataURL(a.Resource) {
		bad("auth.resource", "want an absolute https:// URL without a query or fragment, such as https://mcp.example.com/mcp, got %q", a.Resource)
	}
	for i, s := range a.AuthorizationServers {
		if !metadataURL(s) {
			bad(fmt.Sprintf("auth.authorization_servers[%d]", i), "want an issuer URL such as https://auth.example.com, got %q", s)
		}
	}
	for i, s := range a.ScopesSupported {
		if !scopeToken(s) {
			bad(fmt.Sprintf("auth.scopes_supported[%d]", i), "want a scope such as mcp:read (printable ASCII without spaces, quotes or backslashes), got %q", s)
		}
	}
}

// metadataURL says whether s is an absolute http or https URL with a
// host, and no user, query or fragment.
func metadataURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" && u.User == nil &&
		!strings.ContainsAny(s, "?#\"\\ ")
}

// scopeToken says whether s is a scope-token: %x21 / %x23-5B / %x5D-7E,
// one or more.
func scopeToken(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return s != ""
}

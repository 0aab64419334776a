package config

import (
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

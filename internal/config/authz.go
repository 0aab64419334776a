package config

import (
	"fmt"
	"regexp"
)

// Authz decides who may do what (docs/GATEWAY.md, "Authorization"): an
// ordered list of rules over the verified caller, the MCP operation and
// the request; the first that matches decides. Off when Rules is empty
// and Default allow. The rules' expressions are compiled where the
// gateway is built; here their shape is checked.
type Authz struct {
	// Rules are tried in order.
	Rules []AuthzRule `yaml:"rules"`
	// Default is allow or deny: what happens when no rule matches.
	Default string `yaml:"default"`
}

// AuthzRule is one rule.
type AuthzRule struct {
	// Name names the rule in metrics, logs and denials.
	Name string `yaml:"name"`
	// Match is a CEL expression of type bool.
	Match string `yaml:"match"`
	// Effect is allow or deny.
	Effect string `yaml:"effect"`
	// Scopes, on a deny, are the scopes that would lift it: a caller that
	// lacks one is answered insufficient_scope, naming them.
	Scopes []string `yaml:"scopes"`
}

// On reports whether any authorization is configured.
func (a Authz) On() bool { return len(a.Rules) > 0 || a.Default == "deny" }

// ruleName is what a rule may be called: it is a metric label.
var ruleName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$`)

func (c *Config) validateAuthz(bad func(string, string, ...any)) {
	a := c.Authz
	switch a.Default {
	case "allow":
	case "deny":
		if !c.Auth.On() {
			bad("authz.default", "deny needs auth (JWT verification): without a verified caller nothing could be allowed but by address")
		}
	default:
		bad("authz.default", "want allow or deny, got %q", a.Default)
	}
	seen := map[string]bool{}
	for i, r := range a.Rules {
		key := fmt.Sprintf("authz.rules[%d]", i)
		switch {
		case !ruleName.MatchString(r.Name):
			bad(key+".name", "want 1 to 64 of A-Z, a-z, 0-9, _, ., : and -, starting with a letter or digit, got %q", r.Name)
		case r.Name == "default":
			bad(key+".name", "default names the decision no rule made, in metrics: call the rule something else")
		case seen[r.Name]:
			bad(key+".name", "%q names an earlier rule too", r.Name)
		}
		seen[r.Name] = true
		if r.Match == "" {
			bad(key+".match", "empty: want a CEL expression such as mcp.tool == \"mutate\"")
		}
		switch r.Effect {
		case "allow":
			if len(r.Scopes) > 0 {
				bad(key+".scopes", "only a deny names the scopes that would lift it")
			}
		case "deny":
		default:
			bad(key+".effect", "want allow or deny, got %q", r.Effect)
		}
		for _, s := range r.Scopes {
			if !scopeToken(s) {
				bad(key+".scopes", "%q is not a scope (RFC 6749 section 3.3: no spaces, quotes or backslashes)", s)
			}
		}
	}
}

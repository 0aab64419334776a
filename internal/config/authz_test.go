package config

import (
	"strings"
	"testing"
)

// TestAuthzShape: rules have a name fit for a metric label, once each, a
// match, an effect; scopes only on a deny; deny by default only with auth.
func TestAuthzShape(t *testing.T) {
	const base = "upstreams: [{url: 'http://127.0.0.1:1/mcp'}]\n"
	const auth = "auth: {jwks_file: k.json, issuers: [i], audiences_any: true}\n"
	tests := []struct{ name, yaml, want string }{
		{"a rule", "authz: {rules: [{name: w, match: 'mcp.tool == \"x\"', effect: deny, scopes: [mcp:write]}]}\n", ""},
		{"deny by default with auth", auth + "authz: {default: deny}\n", ""},
		{"deny by default without auth", "authz: {default: deny}\n", "authz.default: deny needs auth"},
		{"another default", "authz: {default: maybe}\n", "authz.default: want allow or deny"},
		{"no name", "authz: {rules: [{match: 'true', effect: deny}]}\n", "line 2: authz.rules[0].name"},
		{"a name twice", "authz: {rules: [{name: a, match: 'true', effect: deny}, {name: a, match: 'true', effect: allow}]}\n", "authz.rules[1].name"},
		{"no match", "authz: {rules: [{name: a, effect: deny}]}\n", "authz.rules[0].match: empty"},
		{"no effect", "authz: {rules: [{name: a, match: 'true'}]}\n", "authz.rules[0].effect"},
		{"scopes on an allow", "authz: {rules: [{name: a, match: 'true', effect: allow, scopes: [s]}]}\n", "authz.rules[0].scopes"},
		{"a scope with a quote", "authz: {rules: [{name: a, match: 'true', effect: deny, scopes: ['a\"b']}]}\n", "not a scope"},
		{"a misspelt key", "authz: {rules: [{name: a, macth: 'true', effect: deny}]}\n", `did you mean "match"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(base + tt.yaml))
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Parse error = %v, want one holding %q", err, tt.want)
			}
		})
	}
	if c, _ := Parse([]byte(base)); c.Authz.Default != "allow" || c.Authz.On() {
		t.Errorf("default %+v, want allow and off", c.Authz)
	}
}

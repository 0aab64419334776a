package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/config"
)

// TestBadRuleNamedByLine: a rule that does not compile, names an unknown
// field or is not a condition is refused at start and on a reload (both
// go through checkAuthz), naming the rule, its position and its line.
func TestBadRuleNamedByLine(t *testing.T) {
	for _, tc := range []struct{ name, match, want string }{
		{"syntax", `mcp.tool ==`, "Syntax error"},
		{"unknown field", `caller.subjet == "x"`, "subjet"},
		{"not bool", `mcp.tool`, "want bool"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "mcpfleet.yaml")
			y := "upstreams: [{url: 'http://127.0.0.1:1/mcp'}]\n" +
				"authz:\n" +
				"  rules:\n" +
				"    - name: fine\n" +
				"      match: 'mcp.tool == \"mutate\"'\n" +
				"      effect: deny\n" +
				"    - name: broken\n" +
				"      match: '" + strings.ReplaceAll(tc.match, "'", "''") + "'\n" +
				"      effect: deny\n"
			if err := os.WriteFile(path, []byte(y), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			p, err := checkAuthz(&cfg, path)
			if p != nil || err == nil {
				t.Fatal("a bad rule compiled")
			}
			msg := err.Error()
			if !strings.Contains(msg, `line 8: authz.rules[1].match: rule "broken": `) || !strings.Contains(msg, tc.want) {
				t.Errorf("error %q, want the rule's line, position and name, and %q", msg, tc.want)
			}
		})
	}
}

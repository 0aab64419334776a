package authz

import (
	"os"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestDocumentedRulesCompile: every YAML example of docs/GATEWAY.md's
// "Authorization" compiles, so that the docs teach rules that work.
func TestDocumentedRulesCompile(t *testing.T) {
	b, err := os.ReadFile("../../docs/GATEWAY.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Authorization\n")
	if !ok {
		t.Fatal(`docs/GATEWAY.md has no "Authorization" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	blocks := 0
	for _, part := range strings.Split(section, "```yaml\n")[1:] {
		block, _, _ := strings.Cut(part, "```")
		var doc struct {
			Authz struct {
				Default string
				Rules   []struct {
					Name, Match, Effect string
					Scopes              []string
				}
			}
		}
		if err := yaml.Unmarshal([]byte(block), &doc); err != nil {
			t.Fatalf("a YAML block does not parse: %v\n%s", err, block)
		}
		var rules []Rule
		for _, r := range doc.Authz.Rules {
			rules = append(rules, Rule{Name: r.Name, Match: r.Match, Effect: Effect(r.Effect), Scopes: r.Scopes})
		}
		if len(rules) == 0 {
			t.Errorf("a block with no rules:\n%s", block)
		}
		if _, err := Compile(rules, Effect(doc.Authz.Default)); err != nil {
			t.Errorf("%v\n%s", err, block)
		}
		blocks++
	}
	if blocks < 4 {
		t.Errorf("%d examples, want the section's four blocks at least", blocks)
	}
}

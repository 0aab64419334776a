package helm

import (
	"strings"
	"testing"
)

// TestAuthzFromValues: gateway.authz becomes serve's authz at the top
// level (a process key, never a service's), as serve's own parser reads
// it, its expressions as written; with none set no authz key is written; the
// chart refuses it under gateway.config.
func TestAuthzFromValues(t *testing.T) {
	for _, files := range [][]string{{"authz.yaml"}, {"services.yaml", "authz.yaml"}} {
		t.Run(strings.Join(files, "+"), func(t *testing.T) {
			r := mustRender(t, renderOptions{files: files})
			checkRelease(t, r)
			g := gatewayOf(t, r)
			a := g.cfg.Authz
			if a.Default != "allow" || len(a.Rules) != 3 || a.Rules[0].Name != "mutate-needs-write" || a.Rules[0].Scopes[0] != "mcp:write" {
				t.Fatalf("serve reads authz %+v\n%s", a, g.text)
			}
			if m := a.Rules[1].Match; m != `mcp.tool.startsWith("restart_") && "oncall" in jwt.groups` {
				t.Errorf("a rule's match came out as %q", m)
			}
			services, _ := topLevel(t, g)["services"].([]any)
			for i, s := range services {
				if _, ok := s.(map[string]any)["authz"]; ok {
					t.Errorf("services[%d] has authz: a process key", i)
				}
			}
		})
	}
	if _, ok := topLevel(t, gatewayOf(t, mustRender(t, renderOptions{})))["authz"]; ok {
		t.Error("the default values write an authz key")
	}
	_, err := render(renderOptions{set: map[string]any{"gateway": map[string]any{"config": map[string]any{"authz": map[string]any{"default": "deny"}}}}})
	if err == nil || !strings.Contains(err.Error(), "gateway.config.authz") {
		t.Errorf("gateway.config.authz: %v, want the chart to refuse it", err)
	}
	_, err = render(renderOptions{set: map[string]any{"gateway": map[string]any{"authz": map[string]any{"rules": []any{map[string]any{"name": "x", "match": "true", "effect": "maybe"}}}}}})
	if err == nil {
		t.Error("an effect neither allow nor deny rendered")
	}
}

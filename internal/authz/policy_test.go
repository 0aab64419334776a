package authz

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// theRules are the rules of the docs' worked example: mutate needs
// mcp:write, restart_* only for the on-call group.
var theRules = []Rule{
	{Name: "mutate-needs-write", Match: `mcp.tool == "mutate" && !("mcp:write" in caller.scopes)`, Effect: Deny, Scopes: []string{"mcp:write"}},
	{Name: "restart-oncall", Match: `mcp.tool.startsWith("restart_") && !("oncall" in jwt.groups)`, Effect: Deny},
}

func TestDecide(t *testing.T) {
	p, err := Compile(theRules, Allow)
	if err != nil {
		t.Fatal(err)
	}
	call := func(tool string, claims map[string]any) *Input {
		return &Input{JWT: claims, Caller: Caller{Subject: "u", Scopes: ScopesOf(claims)}, MCP: MCP{Method: "tools/call", Tool: tool}}
	}
	for _, tc := range []struct {
		name string
		in   *Input
		want Decision
	}{
		{"read token, mutate", call("mutate", map[string]any{"scope": "mcp:read"}),
			Decision{Rule: "mutate-needs-write", Challenge: []string{"mcp:write"}}},
		{"write token, mutate", call("mutate", map[string]any{"scope": "mcp:read mcp:write", "groups": []any{}}),
			Decision{Allowed: true}},
		{"no groups claim, restart: the error is no match", call("restart_now", map[string]any{"scope": "mcp:read"}),
			Decision{Allowed: true, Errors: 1}},
		{"other group, restart", call("restart_now", map[string]any{"groups": []any{"dev"}}),
			Decision{Rule: "restart-oncall"}},
		{"oncall, restart", call("restart_now", map[string]any{"groups": []any{"oncall"}}),
			Decision{Allowed: true}},
		{"scp list", call("mutate", map[string]any{"scp": []any{"mcp:write"}, "groups": []any{}}),
			Decision{Allowed: true}},
		{"no token at all", call("echo", nil), Decision{Allowed: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, p.Decide(tc.in)); d != "" {
				t.Error(d)
			}
		})
	}
}

func TestDefaultDenyWithAllowList(t *testing.T) {
	p, err := Compile([]Rule{{Name: "reads", Match: `mcp.method in ["tools/list", "initialize"] || mcp.tool == "echo"`, Effect: Allow}}, Deny)
	if err != nil {
		t.Fatal(err)
	}
	if d := p.Decide(&Input{MCP: MCP{Method: "tools/call", Tool: "echo"}}); !d.Allowed || d.Rule != "reads" {
		t.Errorf("echo: %+v", d)
	}
	if d := p.Decide(&Input{MCP: MCP{Method: "tools/call", Tool: "mutate"}}); d.Allowed || d.Rule != "" || d.Challenge != nil {
		t.Errorf("mutate: %+v, want the default's denial", d)
	}
}

func TestCompileRefusesBadRules(t *testing.T) {
	for _, tc := range []struct{ name, match, want string }{
		{"syntax", `mcp.tool ==`, "column"},
		{"misspelt field", `caller.subjet == "x"`, "subjet"},
		{"unknown variable", `user.name == "x"`, "undeclared reference to 'user'"},
		{"not bool", `mcp.tool`, "want bool"},
		{"empty", ` `, "empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rules := append([]Rule{theRules[0]}, Rule{Name: "bad one", Match: tc.match, Effect: Deny})
			_, err := Compile(rules, Allow)
			var re *RuleError
			if !errors.As(err, &re) || re.Index != 1 || re.Name != "bad one" {
				t.Fatalf("err %v, want rule 1's", err)
			}
			if !strings.HasPrefix(err.Error(), `authz.rules[1].match: rule "bad one": `) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("err %q, want one line naming the rule and %q", err, tc.want)
			}
		})
	}
}

func TestCostLimitIsNoMatch(t *testing.T) {
	p, err := Compile([]Rule{{Name: "heavy", Match: `jwt.big.all(a, jwt.big.all(b, jwt.big.all(c, a + b + c != "")))`, Effect: Deny}}, Allow)
	if err != nil {
		t.Fatal(err)
	}
	big := make([]any, 200)
	for i := range big {
		big[i] = "x"
	}
	if d := p.Decide(&Input{JWT: map[string]any{"big": big}}); !d.Allowed || d.Errors != 1 {
		t.Errorf("%+v, want the rule's evaluation to stop at the cost limit and count as no match", d)
	}
}

func TestScopesOf(t *testing.T) {
	for _, tc := range []struct {
		claims map[string]any
		want   []string
	}{
		{map[string]any{"scope": "a  b"}, []string{"a", "b"}},
		{map[string]any{"scp": "a b"}, []string{"a", "b"}},
		{map[string]any{"scp": []any{"a", 1, "b"}}, []string{"a", "b"}},
		{map[string]any{}, nil},
	} {
		if d := cmp.Diff(tc.want, ScopesOf(tc.claims)); d != "" {
			t.Errorf("%v: %s", tc.claims, d)
		}
	}
}

// BenchmarkDecide is a tools/call through ten rules none of which
// matches, the gateway's worst ordinary case.
func BenchmarkDecide(b *testing.B) {
	var rules []Rule
	for i := range 10 {
		rules = append(rules, Rule{Name: "r" + string(rune('a'+i)), Match: `mcp.tool == "tool` + string(rune('a'+i)) + `" && !("mcp:write" in caller.scopes)`, Effect: Deny, Scopes: []string{"mcp:write"}})
	}
	p, err := Compile(rules, Allow)
	if err != nil {
		b.Fatal(err)
	}
	in := &Input{JWT: map[string]any{"scope": "mcp:read"}, Caller: Caller{Subject: "u", Scopes: []string{"mcp:read"}}, MCP: MCP{Method: "tools/call", Tool: "echo"}}
	b.ReportAllocs()
	for b.Loop() {
		if d := p.Decide(in); !d.Allowed {
			b.Fatal(d)
		}
	}
}

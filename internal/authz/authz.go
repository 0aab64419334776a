// Package authz decides who may do what at the gateway: an ordered list of
// rules, each a CEL expression (cel.dev/cel-go) over the verified caller,
// the MCP operation and the HTTP request, whose first match allows or
// denies. It is pure: rules are compiled and type-checked once, and a
// decision reads only its input.
package authz

import (
	"fmt"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/ext"
	"cel.dev/cel-go/interpreter"
)

// Effect is what a rule that matches decides.
type Effect string

// The effects of a rule, and the values of authz.default.
const (
	Allow Effect = "allow"
	Deny  Effect = "deny"
)

// Rule is one entry of authz.rules, as configured.
type Rule struct {
	// Name names the rule in metrics, logs and denials; unique.
	Name string
	// Match is the CEL expression; it must be of type bool.
	Match string
	// Effect is what the rule decides when Match is true.
	Effect Effect
	// Scopes, on a deny, are the scopes that would lift it: a caller that
	// lacks one of them is asked to step up (insufficient_scope).
	Scopes []string
}

// CostLimit bounds the work of one rule's evaluation (cel-go's runtime
// cost units): a rule that would run longer errors, which counts as not
// matching. Every rule that compiles and reads a token of sane size runs
// in a few hundred units; a comprehension over a huge claim does not.
const CostLimit = 100_000

// Caller is the verified caller as rules see it: `caller`.
type Caller struct {
	Subject string
	Issuer  string
	Scopes  []string
}

// MCP is the MCP operation as rules see it: `mcp`. Tool, Prompt and
// Resource are "" unless the method names one.
type MCP struct {
	Method   string
	Tool     string
	Prompt   string
	Resource string
	Service  string
	Era      string
}

// Request is the HTTP request as rules see it: `request`. Address is the
// client address as the trusted proxies name it.
type Request struct {
	Host    string
	Path    string
	Address string
}

// Input is what one decision reads.
type Input struct {
	// JWT is the verified token's claims; nil without one (an empty map
	// then, so that `has(jwt.x)` and `"x" in jwt` are false).
	JWT     map[string]any
	Caller  Caller
	MCP     MCP
	Request Request
}

// activation serves the rules' variables (cel-go's Activation) from an
// input, each converted to a CEL value once for all the rules of a
// decision.
type activation struct {
	in      *Input
	adapter types.Adapter
	vals    [4]ref.Val
}

// ResolveName returns the variable name.
func (a *activation) ResolveName(name string) (any, bool) {
	i := -1
	switch name {
	case "jwt":
		i = 0
	case "caller":
		i = 1
	case "mcp":
		i = 2
	case "request":
		i = 3
	default:
		return nil, false
	}
	if a.vals[i] == nil {
		a.vals[i] = a.in.value(i, a.adapter)
	}
	return a.vals[i], true
}

// Parent is nil: the input is the only activation.
func (a *activation) Parent() interpreter.Activation { return nil }

var _ interpreter.Activation = (*activation)(nil)

// value is the input's i-th variable, in ResolveName's order, as a CEL
// value.
func (in *Input) value(i int, a types.Adapter) ref.Val {
	switch i {
	case 0:
		if in.JWT == nil {
			return a.NativeToValue(emptyClaims)
		}
		return a.NativeToValue(in.JWT)
	case 1:
		return in.Caller.object(a)
	case 2:
		return in.MCP.object()
	}
	return in.Request.object()
}

var emptyClaims = map[string]any{}

// newEnv declares the rules' environment: jwt a map, the others object
// types, so that a misspelt field (caller.subjet) fails to compile.
func newEnv() (*cel.Env, error) {
	p, err := newProvider()
	if err != nil {
		return nil, err
	}
	return cel.NewEnv(
		cel.CustomTypeProvider(p),
		cel.Variable("jwt", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("caller", cel.ObjectType("authz.Caller")),
		cel.Variable("mcp", cel.ObjectType("authz.MCP")),
		cel.Variable("request", cel.ObjectType("authz.Request")),
		ext.Strings(),
	)
}

// RuleError is a rule that does not compile: its position in the list,
// its name and CEL's message. Its text starts with the key path
// (authz.rules[2].match), which a configuration error names its line by.
type RuleError struct {
	Index int
	Name  string
	Msg   string
}

func (e *RuleError) Error() string {
	return fmt.Sprintf("authz.rules[%d].match: rule %q: %s", e.Index, e.Name, e.Msg)
}

// issueText puts CEL's issues on one line, each with its column.
func issueText(iss *cel.Issues) string {
	var parts []string
	for _, e := range iss.Errors() {
		parts = append(parts, fmt.Sprintf("column %d: %s", e.Location.Column()+1, e.Message))
	}
	return strings.Join(parts, "; ")
}

package authz

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/types"
)

// Policy is a compiled rule list and its default. It is immutable and safe
// for concurrent use; a reload compiles a new one.
type Policy struct {
	rules   []compiled
	def     Effect
	adapter types.Adapter
}

type compiled struct {
	name   string
	prg    cel.Program
	effect Effect
	scopes []string
}

// Compile type-checks every rule (each must be a bool expression over the
// documented environment) and returns the policy, or every bad rule's
// RuleError joined: nothing of a list with a bad rule is used.
func Compile(rules []Rule, def Effect) (*Policy, error) {
	env, err := newEnv()
	if err != nil {
		return nil, fmt.Errorf("declaring the rules' environment: %w", err)
	}
	p := &Policy{def: def, adapter: env.CELTypeAdapter()}
	if def == "" {
		p.def = Allow
	}
	var errs []error
	for i, r := range rules {
		prg, msg := compile(env, r.Match)
		if msg != "" {
			errs = append(errs, &RuleError{Index: i, Name: r.Name, Msg: msg})
			continue
		}
		p.rules = append(p.rules, compiled{name: r.Name, prg: prg, effect: r.Effect, scopes: slices.Clone(r.Scopes)})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return p, nil
}

// compile compiles one expression; msg says what is wrong with it.
func compile(env *cel.Env, expr string) (cel.Program, string) {
	if strings.TrimSpace(expr) == "" {
		return nil, "empty: want a CEL expression such as mcp.tool == \"mutate\""
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, issueText(iss)
	}
	if !ast.OutputType().IsExactType(cel.BoolType) {
		return nil, fmt.Sprintf("of type %s, want bool (a condition)", ast.OutputType())
	}
	opts := []cel.ProgramOption{cel.EvalOptions(cel.OptOptimize)}
	if est, err := env.EstimateCost(ast, sizes{}); err != nil || est.Max > CostLimit {
		// Its worst case is over the limit: it is run with the runtime
		// cost limit, and stops there. The rest cannot reach it, and
		// run without the tracking's overhead.
		opts = append(opts, cel.CostLimit(CostLimit))
	}
	prg, err := env.Program(ast, opts...)
	if err != nil {
		return nil, err.Error()
	}
	return prg, ""
}

// maxSize bounds the size of every string, list and map a rule reads,
// for the cost estimate: a verified token is at most 16 KiB, and the
// request's host, path and names are bounded by the HTTP engine's header
// and body limits well below this for anything a rule compares.
const maxSize = 64 << 10

// sizes is the cost estimator: every value at most maxSize.
type sizes struct{}

func (sizes) EstimateSize(cost.AstNode) *cost.SizeEstimate {
	return &cost.SizeEstimate{Min: 0, Max: maxSize}
}

func (sizes) EstimateCallCost(string, string, *cost.AstNode, []cost.AstNode) *cost.CallEstimate {
	return nil
}

// Decision is what the policy decided for one input.
type Decision struct {
	// Allowed says whether the operation may go on.
	Allowed bool
	// Rule names the rule that matched; "" when none did (the default).
	Rule string
	// Challenge, on a denial, are the denying rule's scopes when the
	// caller lacks one of them: more scope would lift the denial.
	Challenge []string
	// Errors counts the rules whose evaluation failed (a claim missing,
	// the cost limit): each counted as not matching.
	Errors int
}

// Decide runs the rules in order; the first that matches decides, else
// the default.
func (p *Policy) Decide(in *Input) Decision {
	var d Decision
	act := activation{in: in, adapter: p.adapter}
	for i := range p.rules {
		r := &p.rules[i]
		out, _, err := r.prg.Eval(&act)
		if err != nil {
			d.Errors++
			continue
		}
		if out != types.True {
			continue
		}
		d.Rule, d.Allowed = r.name, r.effect == Allow
		if !d.Allowed && lacksAny(in.Caller.Scopes, r.scopes) {
			d.Challenge = r.scopes
		}
		return d
	}
	d.Allowed = p.def == Allow
	return d
}

// lacksAny reports whether have misses one of want.
func lacksAny(have, want []string) bool {
	for _, s := range want {
		if !slices.Contains(have, s) {
			return true
		}
	}
	return false
}

// Names are the rules' names, in order, for metrics.
func (p *Policy) Names() []string {
	out := make([]string, len(p.rules))
	for i, r := range p.rules {
		out[i] = r.name
	}
	return out
}

// Default is the effect when no rule matches.
func (p *Policy) Default() Effect { return p.def }

// Scopes are the scopes the rules name, each once, in order.
func (p *Policy) Scopes() []string {
	var out []string
	for _, r := range p.rules {
		for _, s := range r.scopes {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// ScopesOf reads a token's scopes from its claims: scope, space separated
// (RFC 8693 section 4.2, RFC 9068), or scp, a list or a string.
func ScopesOf(claims map[string]any) []string {
	if s, ok := claims["scope"].(string); ok {
		return strings.Fields(s)
	}
	switch v := claims["scp"].(type) {
	case string:
		return strings.Fields(v)
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

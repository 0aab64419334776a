package gateway

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpfleet/mcpfleet/internal/authz"
	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
)

// Authorization (docs/GATEWAY.md, "Authorization"): after authentication
// and classification, and before routing, admission, the cache and any
// replica, every JSON-RPC request (each of a batch) is put to the rules
// (package authz). A denial is answered 403 with -32003 naming the rule;
// a deny the caller could lift with more scope carries the scope challenge
// of the MCP authorization spec (2025-11-25, "Scope Challenge Handling";
// RFC 6750 section 3.1). Notifications and responses pass: they ask a
// replica to run nothing. Lists are filtered on their way out (authzlist.go).

// defaultRule is the rule label of a decision no rule made.
const defaultRule = "default"

// authzMetrics are the decisions' counters.
type authzMetrics struct {
	decisions *prometheus.CounterVec
	errors    prometheus.Counter
}

func newAuthzMetrics(reg prometheus.Registerer) *authzMetrics {
	m := &authzMetrics{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpfleet_authz_decisions_total",
			Help: "Authorization decisions on requests, by decision (allow, deny) and the rule that made it (default when none matched).",
		}, []string{"decision", "rule"}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mcpfleet_authz_errors_total",
			Help: "Authorization rules whose evaluation failed (a claim missing, the cost limit), each counted as no match.",
		}),
	}
	reg.MustRegister(m.decisions, m.errors)
	return m
}

// zero exports 0 for every decision a policy can make.
func (m *authzMetrics) zero(p *authz.Policy) {
	for _, d := range []string{"allow", "deny"} {
		for _, r := range p.Names() {
			m.decisions.WithLabelValues(d, r)
		}
	}
	m.decisions.WithLabelValues(string(p.Default()), defaultRule)
}

// SetAuthz replaces the authorization rules (nil: off), as a reload does;
// requests in flight finish under the rules they began with.
func (g *Gateway) SetAuthz(p *authz.Policy) {
	if p != nil {
		g.metrics.authz.zero(p)
	}
	g.authz.Store(p)
}

// authorize decides a request. It returns false when it answered it: a
// denial.
func (g *Gateway) authorize(w http.ResponseWriter, r *http.Request, q *request, rec *record) bool {
	p := g.authz.Load()
	if p == nil || q.msg.Kind != mcpmsg.KindRequest {
		return true
	}
	in := g.authzInput(r, q)
	q.authz, q.policy = in, p
	msgs := q.batch
	if !q.msg.Batch {
		msgs = []mcpmsg.Message{q.msg}
	}
	for i := range msgs {
		if msgs[i].Kind != mcpmsg.KindRequest {
			continue
		}
		in.MCP = g.operation(q, msgs[i].Method, msgs[i].Name)
		d := p.Decide(in)
		g.countDecision(rec, d)
		if !d.Allowed {
			g.deny(w, r, q, rec, d)
			return false
		}
	}
	return true
}

// countDecision records a decision on the request and in the metrics.
func (g *Gateway) countDecision(rec *record, d authz.Decision) {
	rec.authzRule, rec.authzDecision = d.Rule, "deny"
	if d.Allowed {
		rec.authzDecision = "allow"
	}
	rule := d.Rule
	if rule == "" {
		rule = defaultRule
	}
	g.metrics.authz.decisions.WithLabelValues(rec.authzDecision, rule).Inc()
	if d.Errors > 0 {
		g.metrics.authz.errors.Add(float64(d.Errors))
	}
}

// authzRuleLabel is the rule that decided as metrics and spans name it:
// default when none matched, "" when nothing was decided.
func (rec *record) authzRuleLabel() string {
	if rec.authzDecision != "" && rec.authzRule == "" {
		return defaultRule
	}
	return rec.authzRule
}

// deny answers a denied request: 403, -32003, data.rule; with the scope
// challenge when the denying rule's scopes would lift it.
func (g *Gateway) deny(w http.ResponseWriter, r *http.Request, q *request, rec *record, d authz.Decision) {
	rule, msg := d.Rule, "forbidden by authorization rule "+d.Rule
	if rule == "" {
		rule, msg = defaultRule, "forbidden: no authorization rule allows it (authz.default: deny)"
	}
	data, _ := json.Marshal(struct {
		Rule string `json:"rule"`
	}{rule})
	if len(d.Challenge) > 0 {
		msg += "; it needs scope " + strings.Join(d.Challenge, " ")
		w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="`+strings.Join(d.Challenge, " ")+
			`", resource_metadata="`+g.resourceMetadata(r)+`"`)
	}
	rec.reject(w, &mcpmsg.Error{Status: http.StatusForbidden, Code: mcpmsg.CodeForbidden, Message: msg, Data: data}, q.id())
}

// authzInput is what the rules read of a request; its MCP operation is
// filled in per message.
func (g *Gateway) authzInput(r *http.Request, q *request) *authz.Input {
	in := &authz.Input{Request: authz.Request{Host: r.Host, Path: r.URL.Path}}
	if addr, ok := g.aff.proxies.ClientAddr(r.RemoteAddr, g.proxyHops(r)); ok {
		in.Request.Address = addr.String()
	}
	if v := q.verified; v != nil {
		in.JWT = v.Claims
		in.Caller = authz.Caller{Subject: v.Subject, Issuer: v.Issuer, Scopes: authz.ScopesOf(v.Claims)}
	}
	return in
}

// operation is the MCP operation of one message, as the rules see it.
func (g *Gateway) operation(q *request, method, name string) authz.MCP {
	op := authz.MCP{Method: method, Service: g.opts.Service, Era: q.era.String()}
	switch method {
	case "tools/call":
		op.Tool = name
	case "prompts/get":
		op.Prompt = name
	case "resources/read":
		op.Resource = name
	}
	return op
}

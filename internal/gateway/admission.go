package gateway

import (
	"net/http"
	"strconv"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/identity"
	"github.com/mcpfleet/mcpfleet/internal/limit"
	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
)

// Admission (docs/GATEWAY.md, "Limits"): after a request is classified and
// routed, and before it is deduplicated or forwarded, a governed call
// (tools/call unless configured otherwise) must fit its caller's rate
// bucket and concurrency limit and its tool's fleet-wide cap. It then holds
// leases until its answer ends. A refusal is answered as SEP-3304 says: 429,
// JSON-RPC error -32023 with data.retryAfterMs, limit and remaining, and the
// Retry-After and RateLimit-* headers.

// admit runs the admission step. It returns the admission to end when the
// answer has ended (nil when the request is not governed), and false when it
// answered the request itself.
//
// Besides a governed call, it decides every governed request of a batch
// at once (AdmitBatch), an initialize against limits.sessions, and a
// subscriptions/listen against the caller's limits whether or not
// limits.methods names it (Limiter.Governs). For a caller whose token the
// gateway did not verify, the client address's bucket (limits.per_address)
// must allow the call too, so that made-up tokens, each a fresh caller,
// buy nothing.
func (g *Gateway) admit(w http.ResponseWriter, r *http.Request, q *request, rec *record) (*limit.Admission, bool) {
	l := g.opts.Limits
	if l == nil || q.msg.Kind != mcpmsg.KindRequest {
		return nil, true
	}
	ctx := r.Context()
	var a *limit.Admission
	calls, label := 1, ""
	switch {
	case q.msg.Batch:
		bc := batchCalls(q.batch)
		calls = governed(l, bc)
		if calls > 0 {
			a = l.AdmitBatch(ctx, g.limitKey(r, q), bc)
		}
	case q.msg.Method == "initialize":
		a, label = l.AdmitSession(ctx, g.limitKey(r, q)), "sessions"
	case l.Governs(q.msg.Method, q.msg.Name):
		a = l.Admit(ctx, g.limitKey(r, q), q.msg.Method, q.msg.Name)
	}
	if a == nil {
		return nil, true
	}
	if a.Allowed && a.StoreErr == nil && q.verified == nil {
		if b := l.AdmitAddress(ctx, g.addressKey(r), calls); b != nil && !b.Allowed {
			a.Done()
			a, label = b, "address"
		}
	}
	return g.decided(w, q, rec, a, label)
}

// governed counts the requests of a batch the limits govern.
func governed(l *limit.Limiter, calls []limit.BatchCall) int {
	n := 0
	for _, c := range calls {
		if l.Governs(c.Method, c.Tool) {
			n++
		}
	}
	return n
}

// decided records an admission's decision and answers a refusal. label
// names the limit that decided, when it is not a caller's call limit
// (sessions, address).
func (g *Gateway) decided(w http.ResponseWriter, q *request, rec *record, a *limit.Admission, label string) (*limit.Admission, bool) {
	g.metrics.limitStore.Observe(a.StoreTime.Seconds())
	switch {
	case a.StoreErr != nil && a.Allowed:
		rec.limit = "fail_open"
		g.metrics.limitFailOpen.Inc()
	case a.StoreErr != nil:
		rec.limit = "store"
		g.log.Warn("limits store unavailable: refusing (on_store_error closed)", "error", a.StoreErr)
	case a.Allowed:
		rec.limit = "admitted"
	case label != "":
		rec.limit = label
	default:
		rec.limit = a.Reason.String()
	}
	if a.Allowed {
		reason := "none"
		if a.StoreErr != nil {
			reason = "fail_open"
		}
		g.metrics.limitDecisions.WithLabelValues("admitted", reason).Inc()
		return a, true
	}
	g.metrics.limitDecisions.WithLabelValues("refused", rec.limit).Inc()
	g.refuse(w, a, q, rec)
	return nil, false
}

// refuse answers a call admission refused.
func (g *Gateway) refuse(w http.ResponseWriter, a *limit.Admission, q *request, rec *record) {
	ms := a.RetryAfter.Milliseconds()
	h := w.Header()
	h.Set("Retry-After", strconv.FormatInt(int64((a.RetryAfter+time.Second-1)/time.Second), 10))
	data := append([]byte(`{"retryAfterMs":`), strconv.FormatInt(ms, 10)...)
	e := &mcpmsg.Error{Status: http.StatusTooManyRequests, Code: mcpmsg.CodeRateLimited}
	if a.StoreErr != nil {
		// on_store_error: closed. Not a rate limit of this caller's doing:
		// 503, with when to come back.
		e.Status, e.Code = http.StatusServiceUnavailable, mcpmsg.CodeInternalError
		e.Message = "limits store unavailable; retry after " + strconv.FormatInt(ms, 10) + " ms"
	} else {
		e.Message = "rate limited (" + rec.limit + " limit); retry after " + strconv.FormatInt(ms, 10) + " ms"
		limit, remaining := strconv.Itoa(a.Limit), strconv.Itoa(a.Remaining)
		h.Set("RateLimit-Limit", limit)
		h.Set("RateLimit-Remaining", remaining)
		data = append(data, `,"limit":`...)
		data = append(data, limit...)
		data = append(data, `,"remaining":`...)
		data = append(data, remaining...)
	}
	e.Data = append(data, '}')
	rec.reject(w, e, q.id())
}

// limitKey returns whose limits a request uses: the verified caller when
// the gateway verifies tokens, else the salted digest of the credential
// itself (identity.ResolveCredential), never unverified JWT claims, so a
// forged token naming another caller spends its own budget.
func (g *Gateway) limitKey(r *http.Request, q *request) string {
	a := g.aff
	if q.verified != nil {
		return strconv.FormatUint(a.keyer.Key(q.verified.Identity()), 16)
	}
	id := identity.ResolveCredential(r.Header.Get("Authorization"), r.Header.Get("Private-Token"), r.RemoteAddr, g.proxyHops(r), a.proxies)
	return strconv.FormatUint(a.keyer.Key(id), 16)
}

// addressKey returns the salted digest of the request's client address,
// as the trusted proxies name it (identity.Proxies), for limits.per_address.
func (g *Gateway) addressKey(r *http.Request) string {
	addr, _ := g.aff.proxies.ClientAddr(r.RemoteAddr, g.proxyHops(r))
	return strconv.FormatUint(g.aff.keyer.Key(identity.FromAddress(addr)), 16)
}

// proxyHops returns the values of the header the trusted proxies name the
// client in; nil when no proxy is trusted.
func (g *Gateway) proxyHops(r *http.Request) []string {
	if g.aff.proxies == nil {
		return nil
	}
	return r.Header.Values(g.aff.proxies.Header())
}

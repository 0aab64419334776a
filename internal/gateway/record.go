package gateway

import (
	"context"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// record collects what happened to one request, for its metrics and its
// access log line.
type record struct {
	start          time.Time
	r              *http.Request
	q              *request
	replica        string
	rep            *upstream.Replica // the replica that answered; nil when none did
	attempts       int
	status         int
	rejected       bool // answered by the gateway itself
	early          bool // the gateway opened the SSE stream before the replica answered
	upstreamStatus int
	claim          *claim     // the request's idempotency claim, if it holds one
	limit          string     // the admission step's verdict; "" when not governed
	cache          string     // hit, miss or bypass; "" when not cacheable
	capacity       string     // max_inflight: queued, full, queue_full, timeout, store, fail_open; "" when a place was free or none applied
	cachePlan      *cachePlan // a missed lookup whose answer may be kept
	tap            *stream    // a legacy stream's sealed IDs and buffer; nil for others
	calls          *calls     // the calls waiting for their final response on the relayed answer; nil when none
	clientGone     bool
	upstreamCut    bool
	events         int
	keepAlives     int
	bytes          int64

	// upstream is the upstream request's context: once it has ended, the
	// gateway ended the replica's answer, not the replica.
	upstream context.Context

	// A standalone stream that parks (pumping) ends after its handler
	// returned: parked tells the handler's defers to leave their work to
	// it, leave is that work (set by the handler where a stream may
	// park), detached the response's done (h1.Detach).
	parked   bool
	leave    func()
	detached func()

	// writer is the client's writer of relay, the one relay of a request,
	// kept here so that it is not an allocation of its own.
	writer clientWriter

	// For tracing (trace.go): the spans, and what the gateway decided.
	span          trace.Span     // the server span; nil when tracing is off
	attempt       trace.Span     // the answering attempt's client span
	attemptStart  time.Time      // when that attempt began
	route         string         // pinned, or the balance policy that picked
	idem          string         // idempotency: claimed, waited, replayed, unavailable, key_reused, id_reused
	resume        string         // a resume: replayed (from the store), at_replica, gone, expired
	answer        mcpmsg.Outcome // the relayed answer's error code or isError, when read
	rejectCode    int64          // the gateway's own JSON-RPC error code, when it answered
	authzRule     string         // the authorization rule that decided; "" when none matched (the default)
	authzDecision string         // allow or deny; "" when authorization is off
}

func (g *Gateway) begin(r *http.Request) *record {
	return &record{start: time.Now(), r: r}
}

// call is one MCP request's record and classification, in one allocation.
type call struct {
	rec record
	q   request
}

// beginCall is begin for a request that classify will read into the
// call's request.
func (g *Gateway) beginCall(r *http.Request) *call {
	return &call{rec: record{start: time.Now(), r: r}}
}

// reject answers with the gateway's own JSON-RPC error.
func (rec *record) reject(w http.ResponseWriter, e *mcpmsg.Error, id []byte) {
	rec.rejected, rec.status, rec.rejectCode = true, e.Status, int64(e.Code)
	writeError(w, e, id)
}

// outcome sums up a request in one word for metrics and logs.
func (rec *record) outcome() string {
	switch {
	case rec.clientGone:
		return "client_gone"
	case rec.upstreamCut:
		return "upstream_cut"
	case rec.rejected:
		return "rejected"
	case rec.status >= 500:
		return "upstream_error"
	case rec.status >= 400:
		return "client_error"
	}
	return "ok"
}

// finish records metrics and writes one access log line, and the audit
// log's. The line names the method, tool, era, replica and outcome: no
// header values, no session ID, no credential.
func (g *Gateway) finish(rec *record) {
	d := time.Since(rec.start)
	label, era := httpMethodLabel(rec.r.Method), "unknown"
	if rec.q != nil {
		label, era = rec.q.label, rec.q.era.String()
	}
	replica := rec.replica
	if replica == "" {
		replica = "none"
	}
	out := rec.outcome()
	if rec.rep != nil {
		failed := out == upstream.OutcomeError || out == upstream.OutcomeCut
		rec.rep.Finished(rec.start.Add(d), d, failed)
		if failed {
			rec.rep.Failed(upstream.Failure{At: rec.start.Add(d), Outcome: out, Method: label, Status: rec.upstreamStatus})
		}
	}
	rs := g.reqs.get(reqKey{label, era, replica, out}, g.metrics.reqSeries)
	rs.count.Inc()
	rs.duration.Observe(d.Seconds())
	g.observeOperation(rec, d, out)
	if g.tr != nil {
		if rec.span == nil {
			// Refused before it was read (host, method, credential): a
			// span all the same.
			g.startSpan(rec.r, rec.q, rec)
		}
		g.endSpan(rec, d, out)
	}
	g.logAccess(rec.r.Context(), &accessLine{
		httpMethod: httpMethodLabel(rec.r.Method), method: label, tool: rec.tool(), era: era, replica: replica,
		status: rec.status, outcome: out, attempts: rec.attempts,
		limit: rec.limit, cache: rec.cache, capacity: rec.capacity, early: rec.early,
		upstreamStatus: rec.upstreamStatus, events: rec.events, keepAlives: rec.keepAlives,
		bytes: rec.bytes, durationMS: float64(d.Microseconds()) / 1000,
	})
	g.audit(rec)
}

// tool is the request's tools/call tool name, "" for other requests.
func (rec *record) tool() string {
	if rec.q == nil || rec.q.msg.Method != "tools/call" {
		return ""
	}
	return rec.q.msg.Name
}

// httpMethodLabel is an HTTP method as a metric label or a log value: the
// methods of RFC 9110 as they are, anything else "other", so that a client
// that makes up methods cannot make up series.
func httpMethodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodPost, http.MethodDelete, http.MethodHead,
		http.MethodOptions, http.MethodPut, http.MethodPatch, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "other"
}

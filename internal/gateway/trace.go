package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/semconv/v1.39.0/mcpconv"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
	"github.com/mcpfleet/mcpfleet/internal/telemetry"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
	"github.com/prometheus/client_golang/prometheus"
)

// Tracing follows the OpenTelemetry semantic conventions for MCP: one
// server span per request the gateway answers ({mcp.method.name}
// {target}), one client span per attempt at a replica, the trace context
// taken from params._meta (SEP-414) or else the headers, and passed on in
// both. What a span may hold is listed in docs/GATEWAY.md ("Tracing"): the
// method, the tool, prompt or resource it names, the JSON-RPC id, the
// session's digest, the replica, what the gateway decided; never a header
// value, a credential, a sealed ID or an argument.

// maxSpanEvents bounds the events a GET stream's span records, one per
// relayed event: a long-lived stream is one span, and its count of events
// the attribute mcpfleet.stream.events. A POST's stream (a call's answer)
// records only that count.
const maxSpanEvents = 64

// tracing is the gateway's tracer and its OTLP instruments; nil when off.
type tracing struct {
	tracer trace.Tracer
	server mcpconv.ServerOperationDuration
	client mcpconv.ClientOperationDuration
}

func newTracing(t trace.Tracer, m metric.Meter) *tracing {
	if t == nil {
		return nil
	}
	tr := &tracing{tracer: t}
	if m != nil {
		buckets := metric.WithExplicitBucketBoundaries(telemetry.OperationBuckets...)
		tr.server, _ = mcpconv.NewServerOperationDuration(m, buckets)
		tr.client, _ = mcpconv.NewClientOperationDuration(m, buckets)
	}
	return tr
}

// startSpan begins the request's server span, as a child of the trace
// context the client sent, and returns r with it in its context.
func (g *Gateway) startSpan(r *http.Request, q *request, rec *record) *http.Request {
	if g.tr == nil || rec.span != nil {
		return r
	}
	var meta mcpmsg.TraceMeta
	if q != nil {
		meta = q.msg.Trace
	}
	ctx := telemetry.Extract(r.Context(), r.Header, meta)
	ctx, span := g.tr.tracer.Start(ctx, spanName(r, q),
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithTimestamp(rec.start))
	if span.IsRecording() {
		// Built only for a span that keeps them: most are not sampled.
		span.SetAttributes(g.serverAttrs(r, q)...)
	}
	rec.span = span
	return r.WithContext(ctx)
}

// spanName is {mcp.method.name} {target}: the tool or prompt a request
// names; a request without a JSON-RPC method is named by its HTTP method.
func spanName(r *http.Request, q *request) string {
	if q == nil || q.msg.Method == "" {
		return r.Method
	}
	switch q.msg.Method {
	case "tools/call", "prompts/get":
		if q.msg.Name != "" {
			return q.msg.Method + " " + q.msg.Name
		}
	}
	return q.msg.Method
}

// methodAttrs are the conventions' attributes of the JSON-RPC request
// itself, shared by the server span and the attempts.
func methodAttrs(q *request) []attribute.KeyValue {
	if q == nil || q.msg.Method == "" {
		return nil
	}
	a := make([]attribute.KeyValue, 0, 8)
	a = append(a, attribute.String("mcp.method.name", q.msg.Method))
	switch q.msg.Method {
	case "tools/call":
		a = append(a, attribute.String("gen_ai.operation.name", "execute_tool"))
		if q.msg.Name != "" {
			a = append(a, attribute.String("gen_ai.tool.name", q.msg.Name))
		}
	case "prompts/get":
		if q.msg.Name != "" {
			a = append(a, attribute.String("gen_ai.prompt.name", q.msg.Name))
		}
	case "resources/read":
		if q.msg.Name != "" {
			a = append(a, attribute.String("mcp.resource.uri", q.msg.Name))
		}
	}
	if id := q.id(); id != nil {
		a = append(a, attribute.String("jsonrpc.request.id", requestID(id)))
	}
	if v := q.protocolVersion(); v != "" {
		a = append(a, attribute.String("mcp.protocol.version", v))
	}
	return a
}

func (g *Gateway) serverAttrs(r *http.Request, q *request) []attribute.KeyValue {
	a := methodAttrs(q)
	a = append(a,
		attribute.String("network.transport", "tcp"),
		attribute.String("network.protocol.name", "http"),
		attribute.String("network.protocol.version", protoVersion(r)),
		attribute.String("http.request.method", r.Method),
	)
	if host, port, err := net.SplitHostPort(r.Host); err == nil {
		a = append(a, attribute.String("server.address", host))
		if p, err := strconv.Atoi(port); err == nil {
			a = append(a, attribute.Int("server.port", p))
		}
	} else if r.Host != "" {
		a = append(a, attribute.String("server.address", r.Host))
	}
	if q != nil {
		a = append(a, attribute.String("mcpfleet.era", q.era.String()))
		if q.sessionID != "" {
			a = append(a, attribute.String("mcp.session.id", sessionDigest(q.sessionID)))
		}
	}
	if g.opts.Service != "" {
		a = append(a, attribute.String("mcpfleet.service", g.opts.Service))
	}
	return a
}

// sessionDigest stands for a 2025-11-25 session in telemetry: the sealed
// ID routes the session, so whoever holds it may use it, and it is never
// recorded; its SHA-256 (first 16 bytes, hex) ties a session's spans
// together and cannot be turned back into it.
func sessionDigest(sealed string) string {
	sum := sha256.Sum256([]byte(sealed))
	return hex.EncodeToString(sum[:16])
}

// requestID is a JSON-RPC id as the conventions record it: a string's
// value, a number as written.
func requestID(raw []byte) string {
	if len(raw) >= 2 && raw[0] == '"' {
		if v, err := strconv.Unquote(string(raw)); err == nil {
			return v
		}
		return string(raw[1 : len(raw)-1])
	}
	return string(raw)
}

func protoVersion(r *http.Request) string {
	if r.ProtoMajor == 2 {
		return "2"
	}
	return "1.1"
}

// protocolVersion is the request's MCP protocol version, from its header
// or its _meta (2026-07-28).
func (q *request) protocolVersion() string {
	if q.msg.ProtocolVersion != "" {
		return q.msg.ProtocolVersion
	}
	return q.version
}

// startAttempt begins the client span of one attempt at rep, a child of
// the request's server span.
func (g *Gateway) startAttempt(ctx context.Context, q *request, rep *upstream.Replica, n int) (context.Context, trace.Span) {
	if g.tr == nil {
		return ctx, nil
	}
	name := spanName(&http.Request{Method: http.MethodPost}, q)
	ctx, span := g.tr.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient))
	if !span.IsRecording() {
		return ctx, span
	}
	u := rep.URL()
	a := methodAttrs(q)
	a = append(a,
		attribute.String("mcpfleet.replica", rep.Name()),
		attribute.String("server.address", u.Hostname()),
		attribute.String("network.transport", "tcp"),
		attribute.String("network.protocol.name", "http"),
		attribute.Int("mcpfleet.attempt", n),
	)
	if p, err := strconv.Atoi(u.Port()); err == nil {
		a = append(a, attribute.Int("server.port", p))
	}
	span.SetAttributes(a...)
	return ctx, span
}

// endAttempt ends an attempt that got no answer to relay.
func (g *Gateway) endAttempt(span trace.Span, outcome string) {
	if span == nil {
		return
	}
	span.SetAttributes(attribute.String("error.type", outcome), attribute.String("mcpfleet.outcome", outcome))
	span.SetStatus(codes.Error, outcome)
	span.End()
}

// outbound is the request as the replica gets it when tracing: the
// attempt's trace context in traceparent and tracestate (and the baggage
// the client sent in either place), and in the body's _meta where the
// client put it there.
func outbound(ctx context.Context, r *http.Request, q *request) (*http.Request, []byte) {
	h := r.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	for _, k := range []string{"Traceparent", "Tracestate", "Baggage"} {
		delete(h, k)
	}
	telemetry.Propagator.Inject(ctx, propagation.HeaderCarrier(h))
	out := new(http.Request)
	*out = *r
	out.Header = h
	body := q.body
	if at := q.msg.Trace.ParentAt; at != [2]int{} && !q.msg.Batch {
		if tp := h.Get("Traceparent"); tp != "" {
			body = mcpmsg.ReplaceAt(q.body, at, tp)
		}
	}
	return out, body
}

// endSpan ends the request's spans with what happened to it.
func (g *Gateway) endSpan(rec *record, d time.Duration, out string) {
	if rec.span == nil {
		return
	}
	if !rec.span.IsRecording() {
		if rec.attempt != nil {
			rec.attempt.End()
		}
		rec.span.End()
		return
	}
	errType := rec.errorType(out)
	a := make([]attribute.KeyValue, 0, 12)
	a = append(a, attribute.Int("http.response.status_code", rec.status), attribute.String("mcpfleet.outcome", out))
	if rec.replica != "" {
		a = append(a, attribute.String("mcpfleet.replica", rec.replica))
	}
	if rec.attempts > 0 {
		a = append(a, attribute.Int("mcpfleet.attempts", rec.attempts))
	}
	if rec.route != "" {
		a = append(a, attribute.String("mcpfleet.route", rec.route))
	}
	for _, kv := range [...]struct{ k, v string }{
		{"mcpfleet.limit", rec.limit},
		{"mcpfleet.cache", rec.cache},
		{"mcpfleet.capacity", rec.capacity},
		{"mcpfleet.idempotency", rec.idem},
		{"mcpfleet.resume", rec.resume},
		{"mcpfleet.authz.decision", rec.authzDecision},
		{"mcpfleet.authz.rule", rec.authzRuleLabel()},
	} {
		if kv.v != "" {
			a = append(a, attribute.String(kv.k, kv.v))
		}
	}
	if rec.early {
		a = append(a, attribute.Bool("mcpfleet.early_stream", true))
	}
	if rec.events > 0 {
		a = append(a, attribute.Int("mcpfleet.stream.events", rec.events))
	}
	if rec.answer.HasError {
		a = append(a, attribute.String("rpc.response.status_code", strconv.FormatInt(rec.answer.Code, 10)))
	}
	if errType != "" {
		a = append(a, attribute.String("error.type", errType))
		rec.span.SetStatus(codes.Error, errType)
	}
	rec.span.SetAttributes(a...)
	end := trace.WithTimestamp(rec.start.Add(d))
	if rec.attempt != nil {
		if errType != "" {
			rec.attempt.SetAttributes(attribute.String("error.type", errType))
			rec.attempt.SetStatus(codes.Error, errType)
		}
		if rec.answer.HasError {
			rec.attempt.SetAttributes(attribute.String("rpc.response.status_code", strconv.FormatInt(rec.answer.Code, 10)))
		}
		rec.attempt.End(end)
	}
	rec.span.End(end)
}

// observeOperation records mcp.server.operation.duration, on /metrics and
// through OTLP when it is on.
func (g *Gateway) observeOperation(rec *record, d time.Duration, out string) {
	q := rec.q
	if q == nil || q.msg.Method == "" {
		return
	}
	g.ops.get(opKey{method: q.label, tool: g.opTool(q), errType: rec.errorType(out)}, g.newOpSeries).observe(d.Seconds())
}

// observeAttempt records mcp.client.operation.duration for one attempt at
// a replica, until its answer's head: how long the replica took to answer
// is the attempt's; the relay of a stream is the request's.
func (g *Gateway) observeAttempt(q *request, rep *upstream.Replica, errType string, start time.Time) {
	if q.msg.Method == "" {
		return
	}
	g.ops.get(opKey{method: q.label, tool: g.opTool(q), errType: errType, replica: rep.Name()}, g.newOpSeries).observe(time.Since(start).Seconds())
}

func (g *Gateway) opTool(q *request) string {
	if q.msg.Method != "tools/call" {
		return ""
	}
	return g.toolLabel(q.msg.Name)
}

// opKey names one series of the two durations: every value bounded (the
// method from a fixed list, a declared tool or _OTHER, an error type of a
// bounded set, a replica). A server operation has no replica.
type opKey struct{ method, tool, errType, replica string }

// opSeries is where one series is recorded: its Prometheus histogram and
// its OTLP instrument with the attribute set, built once.
type opSeries struct {
	prom prometheus.Observer
	otel metric.Float64Histogram // nil without OTLP metrics
	set  attribute.Set
}

func (s *opSeries) observe(v float64) {
	s.prom.Observe(v)
	if s.otel != nil {
		s.otel.Record(context.Background(), v, metric.WithAttributeSet(s.set))
	}
}

func (g *Gateway) newOpSeries(k opKey) *opSeries {
	a := []attribute.KeyValue{
		attribute.String("mcp.method.name", k.method),
		attribute.String("network.transport", "tcp"),
	}
	if k.tool != "" {
		a = append(a, attribute.String("gen_ai.tool.name", k.tool))
	}
	if k.errType != "" {
		a = append(a, attribute.String("error.type", k.errType))
	}
	s := &opSeries{}
	if k.replica == "" {
		s.prom = g.metrics.serverOps.WithLabelValues(k.method, k.tool, k.errType)
		if g.tr != nil {
			s.otel = g.tr.server.Float64Histogram
		}
	} else {
		a = append(a, attribute.String("mcpfleet.replica", k.replica))
		s.prom = g.metrics.clientOps.WithLabelValues(k.method, k.tool, k.errType, k.replica)
		if g.tr != nil {
			s.otel = g.tr.client.Float64Histogram
		}
	}
	s.set = attribute.NewSet(a...)
	return s
}

// toolLabel is a tool's name as a metric shows it: the name when the
// replicas declared the tool, _OTHER for a name a client made up.
func (g *Gateway) toolLabel(name string) string {
	if g.annotations.knows(name) {
		return name
	}
	return "_OTHER"
}

// errorType is the conventions' error.type of a request: its JSON-RPC
// error's code (a code outside the reserved range as _OTHER), tool_error
// for a tool result with isError, else why the gateway or the replica
// failed it; "" when it went well.
func (rec *record) errorType(out string) string {
	switch {
	case rec.answer.HasError:
		return errorCode(rec.answer.Code)
	case rec.answer.IsError:
		return "tool_error"
	case rec.rejectCode != 0:
		return errorCode(rec.rejectCode)
	case out != "ok":
		return out
	}
	return ""
}

func errorCode(c int64) string {
	if c >= -32768 && c <= -32000 {
		return strconv.FormatInt(c, 10)
	}
	return "_OTHER"
}

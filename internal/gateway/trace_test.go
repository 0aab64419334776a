package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpfleet/mcpfleet/internal/balance"
	"github.com/mcpfleet/mcpfleet/internal/cache"
	"github.com/mcpfleet/mcpfleet/internal/limit"
	"github.com/mcpfleet/mcpfleet/internal/testserver"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// seen is what a replica received of the trace context: the traceparent
// header and the one in the body's _meta.
type seen struct{ header, meta, method string }

// tracedFleet is a traced gateway in front of testserver replicas that
// record the trace context each request brings.
type tracedFleet struct {
	front *frontServer
	gw    *Gateway
	spans *tracetest.SpanRecorder
	mu    sync.Mutex
	got   []seen
}

func (f *tracedFleet) received() []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seen(nil), f.got...)
}

// startTraced starts n replicas (and, with dead, a replica that refuses
// connections first in the list) behind a gateway that traces everything.
func startTraced(t *testing.T, n int, dead bool, opts *Options) *tracedFleet {
	t.Helper()
	f := &tracedFleet{spans: tracetest.NewSpanRecorder()}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(f.spans))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	var specs []upstream.Spec
	if dead {
		ln := httptest.NewServer(http.NotFoundHandler())
		url := ln.URL
		ln.Close() // a port nothing listens on: the attempt is not delivered
		specs = append(specs, upstream.Spec{Name: "replica-dead", URL: url + "/mcp"})
	}
	for i := range n {
		name := fmt.Sprintf("replica-%c", 'a'+i)
		s, err := testserver.New(name, &testserver.Options{CacheTTL: replicaTTL})
		if err != nil {
			t.Fatal(err)
		}
		h := s.Handler()
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			var m struct {
				Method string `json:"method"`
				Params struct {
					Meta struct {
						Traceparent string `json:"traceparent"`
					} `json:"_meta"`
				} `json:"params"`
			}
			_ = json.Unmarshal(body, &m)
			f.mu.Lock()
			f.got = append(f.got, seen{header: r.Header.Get("Traceparent"), meta: m.Params.Meta.Traceparent, method: m.Method})
			f.mu.Unlock()
			r.Body = io.NopCloser(bytes.NewReader(body))
			h.ServeHTTP(w, r)
		}))
		t.Cleanup(hs.Close)
		specs = append(specs, upstream.Spec{Name: name, URL: hs.URL + "/mcp"})
	}
	o := Options{}
	if opts != nil {
		o = *opts
	}
	o.Tracer = tp.Tracer("test")
	f.gw = startGatewayOn(t, specs, &o, io.Discard)
	f.front = newFront(f.gw)
	t.Cleanup(f.front.Close)
	return f
}

// call posts one tools/call and reads its answer whole.
func (f *tracedFleet) call(t *testing.T, r *raw, id int, tool string, meta map[string]any, hdr map[string]string) string {
	t.Helper()
	args := map[string]any{}
	if tool == "mutate" || tool == "lookup" || tool == "echo" {
		args["key"] = "the-argument-value"
	}
	params := map[string]any{"name": tool, "arguments": args}
	if meta != nil {
		params["_meta"] = meta
	}
	resp := r.post(context.Background(), id, "tools/call", params, hdr)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return string(b)
}

const (
	clientTrace  = "0af7651916cd43dd8448eb211c80319c"
	clientSpan   = "b7ad6b7169203331"
	clientParent = "00-" + clientTrace + "-" + clientSpan + "-01"
	otherTrace   = "4bf92f3577b34da6a3ce929d0e0e4736"
	otherParent  = "00-" + otherTrace + "-00f067aa0ba902b7-01"
)

// tree is the recorded spans of one trace, by kind.
type tree struct {
	server  sdktrace.ReadOnlySpan
	clients []sdktrace.ReadOnlySpan
}

func spansOf(t *testing.T, rec *tracetest.SpanRecorder, traceID string) []tree {
	t.Helper()
	var out []tree
	byParent := map[trace.SpanID][]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		if s.SpanKind() == trace.SpanKindClient {
			byParent[s.Parent().SpanID()] = append(byParent[s.Parent().SpanID()], s)
		}
	}
	for _, s := range rec.Ended() {
		if s.SpanKind() == trace.SpanKindServer && s.SpanContext().TraceID().String() == traceID {
			out = append(out, tree{server: s, clients: byParent[s.SpanContext().SpanID()]})
		}
	}
	return out
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}

// TestTraceFollowsTheCall: a 2026-07-28 tools/call's server span is a
// child of the client's span (traceparent header, or params._meta, which
// wins over the header), named and attributed by the MCP conventions; its
// attempt is a client span under it naming the replica, and the replica
// receives the attempt's context in the header, and in _meta where the
// client put it there.
func TestTraceFollowsTheCall(t *testing.T) {
	for _, c := range []struct {
		name string
		meta map[string]any
		hdr  map[string]string
	}{
		{"header", nil, map[string]string{"Traceparent": clientParent, "Tracestate": "vendor=1"}},
		{"meta", map[string]any{"traceparent": clientParent, "tracestate": "vendor=1"}, nil},
		{"meta wins", map[string]any{"traceparent": clientParent}, map[string]string{"Traceparent": otherParent}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := startTraced(t, 2, false, nil)
			r := newRaw(t, f.front.URL+"/mcp", "2026-07-28")
			hdr := map[string]string{"Authorization": "Bearer s3cret-token-value"}
			for k, v := range c.hdr {
				hdr[k] = v
			}
			if body := f.call(t, r, 7, "whoami", c.meta, hdr); !strings.Contains(body, "replica-") {
				t.Fatalf("answer %s", body)
			}
			trees := spansOf(t, f.spans, clientTrace)
			if len(trees) != 1 {
				t.Fatalf("%d server spans in the client's trace, want 1 (all: %d)", len(trees), len(f.spans.Ended()))
			}
			srv := trees[0].server
			if got := srv.Parent().SpanID().String(); got != clientSpan {
				t.Errorf("server span's parent %s, want the client's %s", got, clientSpan)
			}
			if srv.Name() != "tools/call whoami" {
				t.Errorf("server span named %q", srv.Name())
			}
			for k, want := range map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "whoami", "jsonrpc.request.id": "7", "mcp.protocol.version": "2026-07-28", "network.transport": "tcp"} {
				if got := attr(srv, k); got != want {
					t.Errorf("server span %s = %q, want %q", k, got, want)
				}
			}
			if len(trees[0].clients) != 1 {
				t.Fatalf("%d attempt spans, want 1", len(trees[0].clients))
			}
			att := trees[0].clients[0]
			if !strings.HasPrefix(attr(att, "mcpfleet.replica"), "replica-") || attr(att, "server.address") != "127.0.0.1" {
				t.Errorf("attempt span: replica %q, server.address %q", attr(att, "mcpfleet.replica"), attr(att, "server.address"))
			}
			want := "00-" + clientTrace + "-" + att.SpanContext().SpanID().String() + "-01"
			var calls []seen
			for _, s := range f.received() {
				if s.method == "tools/call" {
					calls = append(calls, s)
				}
			}
			if len(calls) != 1 || calls[0].header != want {
				t.Fatalf("the replica received %+v, want traceparent %s", calls, want)
			}
			if c.meta != nil && calls[0].meta != want {
				t.Errorf("the replica's _meta traceparent %q, want %q", calls[0].meta, want)
			}
			if c.meta == nil && calls[0].meta != "" {
				t.Errorf("_meta traceparent %q added where the client put none", calls[0].meta)
			}
			noLeaks(t, f.spans, "s3cret-token-value", "the-argument-value")
		})
	}
}

// noLeaks fails when any recorded span, event or attribute holds one of
// the secrets.
func noLeaks(t *testing.T, rec *tracetest.SpanRecorder, secrets ...string) {
	t.Helper()
	for _, s := range rec.Ended() {
		var b strings.Builder
		b.WriteString(s.Name())
		for _, kv := range s.Attributes() {
			fmt.Fprintf(&b, " %s=%s", kv.Key, kv.Value.String())
		}
		for _, e := range s.Events() {
			b.WriteString(" " + e.Name)
			for _, kv := range e.Attributes {
				fmt.Fprintf(&b, " %s=%s", kv.Key, kv.Value.String())
			}
		}
		for _, kv := range s.Resource().Attributes() {
			fmt.Fprintf(&b, " %s=%s", kv.Key, kv.Value.String())
		}
		for _, secret := range secrets {
			if strings.Contains(b.String(), secret) {
				t.Errorf("span %q holds %q: %s", s.Name(), secret, b.String())
			}
		}
	}
}

// TestTraceOfASession: a 2025-11-25 session's call is traced under the
// client's span; the session shows as its digest, never its sealed ID.
func TestTraceOfASession(t *testing.T) {
	f := startTraced(t, 2, false, nil)
	r := newRaw(t, f.front.URL+"/mcp", "2025-11-25")
	r.initialize()
	f.call(t, r, 9, "whoami", nil, map[string]string{"Traceparent": clientParent})
	trees := spansOf(t, f.spans, clientTrace)
	if len(trees) != 1 || len(trees[0].clients) != 1 {
		t.Fatalf("%d server spans in the client's trace, want 1 with an attempt", len(trees))
	}
	srv := trees[0].server
	if got, want := attr(srv, "mcp.session.id"), sessionDigest(r.session); got != want || got == r.session {
		t.Errorf("mcp.session.id = %q, want the digest %q", got, want)
	}
	if attr(srv, "mcpfleet.route") != "pinned" {
		t.Errorf("route %q, want pinned", attr(srv, "mcpfleet.route"))
	}
	noLeaks(t, f.spans, r.session)
}

// TestTraceShowsWhatTheGatewayDid: a retry after an undelivered attempt
// is two attempt spans; a call refused by a limit, one answered from the
// cache and one replayed by idempotency say so on their server span, with
// no attempt.
func TestTraceShowsWhatTheGatewayDid(t *testing.T) {
	t.Run("retry", func(t *testing.T) {
		f := startTraced(t, 1, true, &Options{Balance: balance.RoundRobin}) // the dead replica comes first in turn
		r := newRaw(t, f.front.URL+"/mcp", "2026-07-28")
		for i := range 4 {
			f.call(t, r, 10+i, "whoami", map[string]any{"traceparent": clientParent}, nil)
		}
		var retried bool
		for _, tr := range spansOf(t, f.spans, clientTrace) {
			if len(tr.clients) != 2 {
				continue
			}
			retried = true
			first, second := tr.clients[0], tr.clients[1]
			if attr(first, "mcpfleet.replica") != "replica-dead" || attr(first, "error.type") != "not_delivered" {
				t.Errorf("first attempt: replica %q, error.type %q", attr(first, "mcpfleet.replica"), attr(first, "error.type"))
			}
			if attr(second, "mcpfleet.replica") != "replica-a" || attr(second, "error.type") != "" {
				t.Errorf("second attempt: replica %q, error.type %q", attr(second, "mcpfleet.replica"), attr(second, "error.type"))
			}
			if attr(tr.server, "mcpfleet.attempts") != "2" {
				t.Errorf("server span attempts %q", attr(tr.server, "mcpfleet.attempts"))
			}
			if ev := tr.server.Events(); len(ev) != 1 || ev[0].Name != "mcpfleet.retry" {
				t.Errorf("server span events %+v, want one mcpfleet.retry", ev)
			}
		}
		if !retried {
			t.Fatal("no call of 4 over round robin was retried off the dead replica")
		}
	})
	t.Run("limit", func(t *testing.T) {
		l := limit.NewLimiter(limit.NewMemory(0), &limit.Options{Rate: 0.01, Burst: 1})
		t.Cleanup(l.Close)
		f := startTraced(t, 1, false, &Options{Limits: l})
		r := newRaw(t, f.front.URL+"/mcp", "2026-07-28")
		f.call(t, r, 1, "whoami", map[string]any{"traceparent": clientParent}, nil)
		f.call(t, r, 2, "whoami", map[string]any{"traceparent": clientParent}, nil)
		trees := spansOf(t, f.spans, clientTrace)
		if len(trees) != 2 {
			t.Fatalf("%d server spans, want 2", len(trees))
		}
		refused := trees[1]
		if attr(trees[0].server, "jsonrpc.request.id") == "2" {
			refused = trees[0]
		}
		if attr(refused.server, "mcpfleet.limit") != "rate" || attr(refused.server, "error.type") == "" || len(refused.clients) != 0 {
			t.Errorf("refused call: limit %q, error.type %q, %d attempts", attr(refused.server, "mcpfleet.limit"), attr(refused.server, "error.type"), len(refused.clients))
		}
	})
	t.Run("cache", func(t *testing.T) {
		f := startTraced(t, 1, false, &Options{Cache: cache.NewLocal(0, 0), CacheRules: cache.Rules{Tools: map[string]bool{"lookup": true}}})
		r := newRaw(t, f.front.URL+"/mcp", "2026-07-28")
		resp := r.post(context.Background(), 1, "tools/list", nil, nil)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		alice := map[string]string{"Authorization": "Bearer alice"}
		f.call(t, r, 2, "lookup", map[string]any{"traceparent": clientParent}, alice)
		f.call(t, r, 3, "lookup", map[string]any{"traceparent": clientParent}, alice)
		got := map[string]int{}
		for _, tr := range spansOf(t, f.spans, clientTrace) {
			got[attr(tr.server, "mcpfleet.cache")+fmt.Sprintf("/%d", len(tr.clients))]++
		}
		if got["miss/1"] != 1 || got["hit/0"] != 1 {
			t.Errorf("cache outcomes/attempts %v, want a miss with its attempt and a hit without", got)
		}
	})
	t.Run("tool error", func(t *testing.T) {
		f := startTraced(t, 1, false, nil)
		r := newRaw(t, f.front.URL+"/mcp", "2026-07-28")
		params := map[string]any{"name": "sleep", "arguments": map[string]any{"seconds": "not a number"}, "_meta": map[string]any{"traceparent": clientParent}}
		resp := r.post(context.Background(), 1, "tools/call", params, nil)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		trees := spansOf(t, f.spans, clientTrace)
		if len(trees) != 1 {
			t.Fatalf("%d server spans", len(trees))
		}
		if !strings.Contains(string(b), `"isError":true`) {
			t.Skipf("the SDK answered a bad argument without isError: %s", b)
		}
		if got := attr(trees[0].server, "error.type"); got != "tool_error" {
			t.Errorf("error.type %q for %s, want tool_error", got, b)
		}
	})
	t.Run("idempotency", func(t *testing.T) {
		f := startTraced(t, 2, false, nil)
		r := newRaw(t, f.front.URL+"/mcp", "2026-07-28")
		hdr := map[string]string{"Idempotency-Key": "op-7"}
		f.call(t, r, 1, "mutate", map[string]any{"traceparent": clientParent}, hdr)
		f.call(t, r, 2, "mutate", map[string]any{"traceparent": clientParent}, hdr)
		got := map[string]int{}
		for _, tr := range spansOf(t, f.spans, clientTrace) {
			got[attr(tr.server, "mcpfleet.idempotency")+fmt.Sprintf("/%d", len(tr.clients))]++
		}
		if got["claimed/1"] != 1 || got["replayed/0"] != 1 {
			t.Errorf("idempotency outcomes/attempts %v, want a claimed run and a replay", got)
		}
	})
}

// TestTracingOffTouchesNothing: without a tracer the client's trace
// context reaches the replica as it was sent.
func TestTracingOffTouchesNothing(t *testing.T) {
	f := startTraced(t, 1, false, nil)
	f.gw.tr = nil
	r := newRaw(t, f.front.URL+"/mcp", "2026-07-28")
	f.call(t, r, 1, "whoami", map[string]any{"traceparent": clientParent}, map[string]string{"Traceparent": otherParent})
	for _, s := range f.received() {
		if s.method == "tools/call" && (s.header != otherParent || s.meta != clientParent) {
			t.Errorf("with tracing off the replica received %+v", s)
		}
	}
	if n := len(f.spans.Ended()); n != 0 {
		t.Errorf("%d spans recorded with tracing off", n)
	}
}

// TestOperationDurationsOnMetrics: the conventions' two durations are on
// /metrics with tracing off, a tool's name only once the replicas declared
// it, a made-up one as _OTHER.
func TestOperationDurationsOnMetrics(t *testing.T) {
	f := startTraced(t, 1, false, nil)
	f.gw.tr = nil
	r := newRaw(t, f.front.URL+"/mcp", "2026-07-28")
	f.call(t, r, 1, "made-up-tool-name", nil, nil)
	resp := r.post(context.Background(), 2, "tools/list", nil, nil)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	f.call(t, r, 3, "whoami", nil, nil)
	families, err := f.gw.metrics.root.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, mf := range families {
		name := mf.GetName()
		if name != "mcp_server_operation_duration_seconds" && name != "mcp_client_operation_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			got[name+" "+labels["mcp_method_name"]+" "+labels["gen_ai_tool_name"]+" "+labels["error_type"]] += m.GetHistogram().GetSampleCount()
		}
	}
	for _, want := range []string{
		"mcp_server_operation_duration_seconds tools/call whoami ",
		"mcp_client_operation_duration_seconds tools/call whoami ",
		"mcp_server_operation_duration_seconds tools/list  ",
	} {
		if got[want] != 1 {
			t.Errorf("%q counted %d, want 1 (all: %v)", want, got[want], got)
		}
	}
	for k := range got {
		if strings.Contains(k, "made-up-tool-name") {
			t.Errorf("a client's tool name became a label: %q", k)
		}
	}
}

// TestTraceOfTheSSETransport: a 2024-11-05 message is traced like any
// call, with its attempt, and its stream is one span whose events are the
// stream's.
func TestTraceOfTheSSETransport(t *testing.T) {
	_, specs := startSSEReplicas(t, 1)
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	opts := sharedSecretOptions(t)
	opts.Tracer = tp.Tracer("test")
	_, fronts, _ := startGateways(t, 1, specs, opts)
	base := fronts[0].URL
	_, endpoint, stop := sseOpen(t, base)
	status, body := ssePost(t, base, endpoint, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{},"_meta":{"traceparent":"`+clientParent+`"}}}`)
	if status != http.StatusAccepted {
		t.Fatalf("message: %d %s", status, body)
	}
	stop()
	trees := spansOf(t, spans, clientTrace)
	if len(trees) != 1 || trees[0].server.Name() != "tools/call whoami" || len(trees[0].clients) != 1 {
		t.Fatalf("the message's trace: %d server spans %+v", len(trees), trees)
	}
	if attr(trees[0].server, "mcpfleet.era") != "2024-11-05" {
		t.Errorf("era %q", attr(trees[0].server, "mcpfleet.era"))
	}
	var stream sdktrace.ReadOnlySpan
	deadline := time.Now().Add(5 * time.Second)
	for stream == nil && time.Now().Before(deadline) {
		for _, s := range spans.Ended() {
			if s.Name() == "GET" && attr(s, "mcpfleet.era") == "2024-11-05" {
				stream = s
			}
		}
		if stream == nil {
			time.Sleep(20 * time.Millisecond) // the stream's handler ends a moment after its client
		}
	}
	if stream == nil {
		t.Fatal("no span for the stream")
	}
	if len(stream.Events()) == 0 || attr(stream, "mcpfleet.stream.events") == "" {
		t.Errorf("the stream's span has %d events, mcpfleet.stream.events %q", len(stream.Events()), attr(stream, "mcpfleet.stream.events"))
	}
}

package store

import (
	"context"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpfleet/mcpfleet/internal/store/redistest"
)

// TestCommandsOfATracedRequestAreSpans: a command whose context holds a
// recording span is a child span (db.system.name redis, the command's
// name, no key or argument); one without, none.
func TestCommandsOfATracedRequestAreSpans(t *testing.T) {
	addr := redistest.Start(t)
	c, err := NewClient(ModeSingle, "redis://"+addr, "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctx := context.Background()
	if err := c.Set(ctx, "mcpfleet:untraced", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n := len(rec.Ended()); n != 0 {
		t.Fatalf("%d spans for a command outside any request's span", n)
	}
	ctx, parent := tp.Tracer("test").Start(ctx, "request", trace.WithSpanKind(trace.SpanKindServer))
	c.Set(ctx, "mcpfleet:caller-digest-key", "secret-value", 0)
	pipe := c.Pipeline()
	pipe.Get(ctx, "mcpfleet:caller-digest-key")
	pipe.Get(ctx, "mcpfleet:other")
	pipe.Exec(ctx)
	parent.End()
	var children []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Parent().SpanID() == parent.SpanContext().SpanID() {
			children = append(children, s)
		}
	}
	if len(children) != 2 || children[0].Name() != "set" || children[1].Name() != "pipeline get" {
		names := []string{}
		for _, s := range children {
			names = append(names, s.Name())
		}
		t.Fatalf("child spans %v, want set and pipeline get", names)
	}
	for _, s := range children {
		var text strings.Builder
		for _, kv := range s.Attributes() {
			text.WriteString(string(kv.Key) + "=" + kv.Value.String() + " ")
		}
		if !strings.Contains(text.String(), "db.system.name=redis") {
			t.Errorf("%s: attributes %s", s.Name(), text.String())
		}
		if strings.Contains(text.String(), "caller-digest-key") || strings.Contains(text.String(), "secret-value") {
			t.Errorf("%s records a key or a value: %s", s.Name(), text.String())
		}
	}
}

package store

import (
	"context"
	"errors"
	"net"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// traceHook makes each command on a traced request's path a client span
// under that request's span (db.system.name redis, the command's name, the
// node): a request's store round trips show in its trace. A command with no
// recording span in its context (health checks, renewals, a request not
// sampled) costs one context lookup. Keys and arguments are never
// recorded: they hold the salted digests of callers.
type traceHook struct{}

func (traceHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (traceHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		parent := trace.SpanFromContext(ctx)
		if !parent.IsRecording() {
			return next(ctx, cmd)
		}
		ctx, span := startSpan(ctx, parent, cmd.Name())
		err := next(ctx, cmd)
		endSpan(span, err)
		return err
	}
}

func (traceHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		parent := trace.SpanFromContext(ctx)
		if !parent.IsRecording() || len(cmds) == 0 {
			return next(ctx, cmds)
		}
		ctx, span := startSpan(ctx, parent, "pipeline "+cmds[0].Name())
		span.SetAttributes(attribute.Int("db.operation.batch.size", len(cmds)))
		err := next(ctx, cmds)
		endSpan(span, err)
		return err
	}
}

func startSpan(ctx context.Context, parent trace.Span, op string) (context.Context, trace.Span) {
	return parent.TracerProvider().Tracer("github.com/mcpfleet/mcpfleet/internal/store").Start(ctx, op,
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("db.system.name", "redis"), attribute.String("db.operation.name", op)))
}

func endSpan(span trace.Span, err error) {
	if err != nil && err != redis.Nil {
		// The error's kind, not its text: a server's message may quote a key.
		span.SetAttributes(attribute.String("error.type", errorType(err)))
		span.SetStatus(codes.Error, errorType(err))
	}
	span.End()
}

func errorType(err error) string {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.As(err, &ne):
		return "network"
	}
	if re, ok := err.(redis.Error); ok {
		msg := re.Error()
		for i, c := range msg {
			if c == ' ' {
				return msg[:i] // the error's prefix: ERR, MOVED, CLUSTERDOWN, NOSCRIPT...
			}
		}
		if len(msg) <= 32 {
			return msg
		}
	}
	return "_OTHER"
}

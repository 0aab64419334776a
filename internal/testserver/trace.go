package testserver

import (
	"bytes"
	"io"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
	"github.com/mcpfleet/mcpfleet/internal/telemetry"
)

// traced wraps the MCP endpoint in a server span per request, by the MCP
// semantic conventions, under the trace context the request brings (its
// params._meta, or its headers): a replica that joins the trace its
// gateway passes on, as an instrumented MCP server would.
func traced(tracer trace.Tracer, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/mcp" {
			next.ServeHTTP(w, r)
			return
		}
		var msg mcpmsg.Message
		name := r.Method
		if r.Method == http.MethodPost {
			body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
			if err != nil {
				http.Error(w, "reading the body", http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			if m, err := mcpmsg.Parse(body); err == nil {
				msg = m
				name = m.Method
				if (m.Method == "tools/call" || m.Method == "prompts/get") && m.Name != "" {
					name += " " + m.Name
				}
			}
		}
		attrs := []attribute.KeyValue{attribute.String("network.transport", "tcp"), attribute.String("network.protocol.name", "http")}
		if msg.Method != "" {
			attrs = append(attrs, attribute.String("mcp.method.name", msg.Method))
			if msg.Method == "tools/call" && msg.Name != "" {
				attrs = append(attrs, attribute.String("gen_ai.tool.name", msg.Name))
			}
		}
		ctx := telemetry.Extract(r.Context(), r.Header, msg.Trace)
		ctx, span := tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
		defer span.End()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r.WithContext(ctx))
		span.SetAttributes(attribute.Int("http.response.status_code", sw.status))
		if sw.status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(sw.status))
		}
	})
}

// statusWriter notes the status a handler answered with; it passes Flush
// on, for SSE.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

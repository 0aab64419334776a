package telemetry

import (
	"context"
	"net/http"

	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
)

// Extract returns ctx with the trace context an MCP request carries: in
// its params._meta (SEP-414) or else in its headers. _meta wins where both
// have one, as the MCP trace propagation proposal and its implementations
// (ToolHive, agentgateway) have it; a tracestate goes with its own
// traceparent, never one source's parent with the other's state.
func Extract(ctx context.Context, h http.Header, meta mcpmsg.TraceMeta) context.Context {
	return Propagator.Extract(ctx, metaCarrier{meta: meta, h: h})
}

type metaCarrier struct {
	meta mcpmsg.TraceMeta
	h    http.Header
}

func (c metaCarrier) Get(key string) string {
	fromMeta := c.meta.Traceparent != ""
	switch key {
	case "traceparent":
		if fromMeta {
			return c.meta.Traceparent
		}
	case "tracestate":
		if fromMeta {
			return c.meta.Tracestate
		}
	case "baggage":
		if c.meta.Baggage != "" {
			return c.meta.Baggage
		}
	}
	return c.h.Get(key)
}

func (metaCarrier) Set(string, string) {}
func (metaCarrier) Keys() []string     { return []string{"traceparent", "tracestate", "baggage"} }

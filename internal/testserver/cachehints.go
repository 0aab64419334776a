package testserver

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Cache scopes of SEP-2549, the values of a result's cacheScope.
const (
	scopePublic  = "public"
	scopePrivate = "private"
)

// cacheTTL returns the [mcp.ServerOptions.SetCacheable] hook that sets ttlMs
// to ttl on every result with cache hints, leaving cacheScope as the handler
// set it; nil, the SDK's defaults, when ttl is not positive. The SDK calls
// it with its own lock held, so it must not call back into the server.
func cacheTTL(ttl time.Duration) func(context.Context, mcp.Request, *mcp.Cacheable) {
	if ttl <= 0 {
		return nil
	}
	ms := int(ttl.Milliseconds())
	return func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) {
		c.TTLMs = ms
	}
}

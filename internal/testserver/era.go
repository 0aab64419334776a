package testserver

import (
	"net/http"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Header names and the first stateless protocol version, from the Streamable
// HTTP transport (2025-11-25 §Session Management, §Protocol Version Header)
// and SEP-2575.
const (
	headerProtocolVersion = "Mcp-Protocol-Version"
	headerSessionID       = "Mcp-Session-Id"
	statelessVersion      = "2026-07-28"
)

// eraVersions returns the protocol versions the MCP server advertises for
// era; nil means every version the SDK supports.
//
// Only era 2026 narrows them. The stateless handler would otherwise answer a
// legacy initialize with an ephemeral session, so a 2025 client would seem to
// connect. With only the stateless versions advertised, the SDK answers
// initialize with 2025-11-25 and then rejects that version's header with 400,
// so the legacy client fails to connect, as against a 2026-only server. Era
// 2025 needs nothing from the stateful handler: it answers server/discover
// with the legacy versions only, and a 2026 client falls back to initialize.
// Served stateless ([Options.Stateless]), era 2025 advertises the legacy
// versions only, so that the stateless handler does not serve a 2026-07-28
// request as one of its own.
func eraVersions(era string, stateless bool) []string {
	switch {
	case era == Era2026:
		return slices.DeleteFunc(mcp.SupportedProtocolVersions(), func(v string) bool {
			return v < statelessVersion
		})
	case era == Era2025 && stateless:
		return slices.DeleteFunc(mcp.SupportedProtocolVersions(), func(v string) bool {
			return v >= statelessVersion
		})
	}
	return nil
}

// mcpHandler returns the /mcp handler for the server's era.
//
// The SDK handles each era with a differently configured
// StreamableHTTPHandler over the same *mcp.Server: a stateful one that mints
// sessions at initialize and serves GET streams and DELETE, and a stateless
// one that serves the 2026-07-28 era, where each POST is the whole request.
// Both keep SSE responses (the default), since the gateway relays SSE, and
// both skip the SDK's DNS-rebinding check, since the gateway forwards with
// its own Host header.
func (s *Server) mcpHandler() http.Handler {
	getServer := func(*http.Request) *mcp.Server { return s.mcp }
	var events mcp.EventStore
	if s.eventStore {
		// 2025-11-25 streams resumable at the replica: events carry IDs
		// and a GET with Last-Event-ID replays them.
		events = mcp.NewMemoryEventStore(nil)
	}
	stateful := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		Logger:                     quiet(s.logger),
		DisableLocalhostProtection: true,
		EventStore:                 events,
		JSONResponse:               s.opts.JSONResponse,
	})
	stateless := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		Stateless: true,
		// A closed POST is how a 2026-era client cancels (SEP-2575), so the
		// tool handler's context must end with the request's.
		PropagateRequestCancellation: true,
		Logger:                       quiet(s.logger),
		DisableLocalhostProtection:   true,
		JSONResponse:                 s.opts.JSONResponse,
	})
	switch {
	case s.stateless, s.era == Era2026:
		return stateless
	case s.era == Era2025:
		return stateful
	}
	return eraDispatch{stateful: stateful, stateless: stateless}
}

// eraDispatch routes each /mcp request to the handler for its era.
type eraDispatch struct {
	stateful, stateless http.Handler
}

// ServeHTTP sends stateless-era requests to the stateless handler and all
// others (initialize, session requests, GET streams, DELETE) to the stateful
// one.
func (d eraDispatch) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if isStateless(r) {
		d.stateless.ServeHTTP(w, r)
		return
	}
	d.stateful.ServeHTTP(w, r)
}

// isStateless reports whether r belongs to the 2026-07-28 era: it names a
// protocol version at or after 2026-07-28 and no session. Versions are
// YYYY-MM-DD, so they compare as strings. A request that names a session is
// legacy whatever its version, and the stateful handler answers it.
func isStateless(r *http.Request) bool {
	return r.Header.Get(headerProtocolVersion) >= statelessVersion &&
		r.Header.Get(headerSessionID) == ""
}

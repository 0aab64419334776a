package mcpmsg

// Era is the protocol era a request belongs to, which decides how it routes.
type Era uint8

// The eras the gateway serves side by side on one endpoint.
const (
	// EraLegacy is 2025-11-25 and older: sessions minted at initialize,
	// requests pinned to the session's replica.
	EraLegacy Era = iota + 1
	// EraStateless is 2026-07-28 and newer: no sessions, any replica.
	EraStateless
	// EraSSE is the deprecated 2024-11-05 HTTP+SSE transport: a GET
	// stream per session, and POSTs to the endpoint its first event names,
	// pinned to the stream's replica. The gateway serves it on paths of its
	// own; EraOf never returns it.
	EraSSE
)

// String names the era as metrics and logs show it.
func (e Era) String() string {
	switch e {
	case EraLegacy:
		return "2025-11-25"
	case EraStateless:
		return "2026-07-28"
	case EraSSE:
		return "2024-11-05"
	}
	return "unknown"
}

// IsStatelessVersion reports whether a protocol version string names the
// 2026-07-28 revision or a later one. Versions are dates, so they compare as
// strings (the MCP versioning scheme, "YYYY-MM-DD").
func IsStatelessVersion(v string) bool {
	return len(v) == len(Version20260728) && v >= Version20260728
}

// EraOf classifies a request from its Mcp-Session-Id and MCP-Protocol-Version
// headers and, for POST, its parsed body (nil for GET and DELETE).
//
// A session ID always means the legacy era: only 2025-11-25 servers mint one.
// Otherwise a 2026-07-28 version in the header or in params._meta means the
// stateless era (SEP-2575); everything else (initialize, older clients) is
// legacy.
func EraOf(sessionID, versionHeader string, m *Message) Era {
	if sessionID != "" {
		return EraLegacy
	}
	if IsStatelessVersion(versionHeader) {
		return EraStateless
	}
	if m != nil && !m.HasInitialize && IsStatelessVersion(m.ProtocolVersion) {
		return EraStateless
	}
	return EraLegacy
}

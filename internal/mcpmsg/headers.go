package mcpmsg

import (
	"fmt"
	"strings"
)

// The standard headers of the Streamable HTTP transport.
const (
	HeaderSessionID       = "Mcp-Session-Id"
	HeaderProtocolVersion = "Mcp-Protocol-Version"
	HeaderMethod          = "Mcp-Method"
	HeaderName            = "Mcp-Name"
	HeaderLastEventID     = "Last-Event-Id"
)

// CheckHeaders verifies that the Mcp-Method and Mcp-Name headers of a
// 2026-07-28 request mirror its body, as SEP-2243 requires: Mcp-Method on
// every request, Mcp-Name on tools/call, resources/read and prompts/get. It
// applies to single requests; a batch or a response passes. The error says
// which header disagreed, never echoing more than the header's name.
func CheckHeaders(method, name string, m *Message) error {
	if m.Batch || m.Kind == KindResponse {
		return nil
	}
	if method == "" {
		return fmt.Errorf("missing required %s header", HeaderMethod)
	}
	if method != m.Method {
		return fmt.Errorf("header mismatch: %s does not match the body's method", HeaderMethod)
	}
	// Mcp-Name is required for tools/call, resources/read and prompts/get.
	// For tasks/* it is optional, and routes by the task id: when present it
	// must be the body's, or the request would reach one replica and name a
	// task on another.
	switch {
	case nameMember(m.Method) == "":
	case name == "" && !strings.HasPrefix(m.Method, "tasks/"):
		return fmt.Errorf("missing required %s header for method %q", HeaderName, m.Method)
	case name != "" && name != m.Name:
		return fmt.Errorf("header mismatch: %s does not match the body's name", HeaderName)
	}
	return nil
}

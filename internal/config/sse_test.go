package config

import "testing"

// TestSSETransportKeys: the 2024-11-05 HTTP+SSE transport is on by
// default at /sse and /messages; sse_path "" turns it off; each upstream
// and discovery may name the replicas' SSE endpoint.
func TestSSETransportKeys(t *testing.T) {
	c, err := Parse([]byte("upstreams:\n  - url: http://127.0.0.1:1/mcp\n  - url: http://127.0.0.1:2/mcp\n    sse_url: http://127.0.0.1:3/events\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.SSEPath != "/sse" || c.SSEMessagesPath != "/messages" || c.Discovery.SSEPath != "/sse" {
		t.Errorf("defaults: sse_path %q, sse_messages_path %q, discovery.sse_path %q", c.SSEPath, c.SSEMessagesPath, c.Discovery.SSEPath)
	}
	if c.Upstreams[0].SSEURL != "" || c.Upstreams[1].SSEURL != "http://127.0.0.1:3/events" {
		t.Errorf("sse_url: %+v", c.Upstreams)
	}
	off, err := Parse([]byte("upstreams: [{url: 'http://127.0.0.1:1/mcp'}]\nsse_path: \"\"\nsse_messages_path: /mcp\n"))
	if err != nil || off.SSEPath != "" {
		t.Errorf("sse_path \"\" (off, messages path then unchecked): %q, %v", off.SSEPath, err)
	}
	d, err := Parse([]byte("discovery: {dns_name: mcp.svc, port: 3001, sse_path: /v1/sse}\n"))
	if err != nil || d.Discovery.SSEPath != "/v1/sse" {
		t.Errorf("discovery.sse_path: %q, %v", d.Discovery.SSEPath, err)
	}
}

package health

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mcpfleet/mcpfleet/internal/sse"
)

// A replica's MCP endpoint is proven by what it answers to one of three
// requests, one per revision of the transport. The checker sends them; the
// decision of what an answer proves lives here, pure, so that it can be
// read and tested as a table.

// Probe is one of the requests that may prove an MCP endpoint.
type Probe int32

const (
	// ProbeDiscover is a 2026-07-28 server/discover POSTed to the MCP
	// endpoint: it opens no session.
	ProbeDiscover Probe = iota
	// ProbeInitialize is a 2025-11-25 initialize POSTed to the MCP
	// endpoint; the session it opens is DELETEd at once (Streamable HTTP,
	// "Session Management").
	ProbeInitialize
	// ProbeSSE is a GET of the 2024-11-05 SSE endpoint, whose first event
	// must be "endpoint" (the HTTP+SSE transport); the stream is closed
	// after it, which ends that session.
	ProbeSSE
)

// String returns "server/discover", "initialize" or "sse".
func (p Probe) String() string {
	switch p {
	case ProbeDiscover:
		return "server/discover"
	case ProbeInitialize:
		return "initialize"
	case ProbeSSE:
		return "sse"
	}
	return fmt.Sprintf("Probe(%d)", int32(p))
}

// Answer is what a probe got back, as far as the decision needs it.
type Answer struct {
	// Status is the HTTP status code.
	Status int
	// MediaType is the Content-Type's media type, lower case and without
	// parameters; "" when the answer has none.
	MediaType string
	// Challenge reports a WWW-Authenticate header (its value is never
	// kept).
	Challenge bool
	// Body is the start of the body: for text/event-stream the first event
	// block that carries data, else at most a few KiB.
	Body []byte
}

// Verdict is what an Answer proves.
type Verdict int

const (
	// VerdictNone proves nothing: no MCP endpoint answered this probe; the
	// next one may still prove one.
	VerdictNone Verdict = iota
	// VerdictMCP proves an MCP endpoint.
	VerdictMCP
	// VerdictDraining is a 503 {"status":"draining"}: the replica is
	// shutting down.
	VerdictDraining
	// VerdictFail is a server error (5xx): the replica is there and
	// failing; no other probe is worth sending.
	VerdictFail
)

// String returns "none", "mcp", "draining" or "fail".
func (v Verdict) String() string {
	switch v {
	case VerdictNone:
		return "none"
	case VerdictMCP:
		return "mcp"
	case VerdictDraining:
		return "draining"
	case VerdictFail:
		return "fail"
	}
	return fmt.Sprintf("Verdict(%d)", int(v))
}

// Judge returns what answer a proves as the answer to probe p:
//
//   - 503 {"status":"draining"} is draining, any other 5xx a failure;
//   - 401 or 403 with a WWW-Authenticate challenge is an MCP endpoint
//     behind authorization (MCP "Authorization": a protected server answers
//     401 with the challenge before it reads the request);
//   - to server/discover or initialize, a JSON-RPC 2.0 message, as JSON or
//     as the first data event of a stream, is an MCP endpoint whatever it
//     says (an error such as "unsupported protocol version" comes from a
//     live server of another revision);
//   - to the SSE GET, a text/event-stream whose first event is "endpoint"
//     with a URL in its data is a 2024-11-05 endpoint;
//   - anything else (404, 405, HTML, plain text) proves nothing.
func Judge(p Probe, a Answer) Verdict {
	switch {
	case a.Status == 503 && SaysDraining(a.Body):
		return VerdictDraining
	case a.Status >= 500:
		return VerdictFail
	case (a.Status == 401 || a.Status == 403) && a.Challenge:
		return VerdictMCP
	}
	if p == ProbeSSE {
		if a.Status == 200 && a.MediaType == "text/event-stream" {
			ev := sse.Parse(a.Body)
			if ev.Type == "endpoint" && len(bytes.TrimSpace(ev.Data)) > 0 {
				return VerdictMCP
			}
		}
		return VerdictNone
	}
	if isJSONRPC(a.MediaType, a.Body) {
		return VerdictMCP
	}
	return VerdictNone
}

// Order returns the probes to send, last (the one that proved the endpoint
// last time) first and the others in the order of the revisions, newest
// first, so that a replica proven once costs one request per check.
func Order(last Probe) []Probe {
	order := []Probe{ProbeDiscover, ProbeInitialize, ProbeSSE}
	for i, p := range order {
		if p == last {
			copy(order[1:i+1], order[:i])
			order[0] = last
		}
	}
	return order
}

// Worth reports whether probe p is worth sending after discover, the
// answer to server/discover (nil when it was not sent): initialize is not
// when the same POST to the same URL was answered 404 or 405, which no MCP
// endpoint answers to a POST.
func Worth(p Probe, discover *Answer) bool {
	if p != ProbeInitialize || discover == nil {
		return true
	}
	return discover.Status != 404 && discover.Status != 405
}

// NoEndpoint is the reason a replica is down when no probe proved its MCP
// endpoint: "no MCP endpoint at <url> (HTTP 404, text/html)". url must hold
// no credentials; a is the answer of its MCP endpoint.
func NoEndpoint(url string, a Answer) string {
	if a.MediaType == "" {
		return fmt.Sprintf("%s %s (HTTP %d)", noEndpoint, url, a.Status)
	}
	return fmt.Sprintf("%s %s (HTTP %d, %s)", noEndpoint, url, a.Status, a.MediaType)
}

// noEndpoint starts every reason NoEndpoint returns.
const noEndpoint = "no MCP endpoint at"

// IsNoEndpoint reports a reason that NoEndpoint returned.
func IsNoEndpoint(reason string) bool { return strings.HasPrefix(reason, noEndpoint) }

// isJSONRPC reports a JSON-RPC 2.0 message in body: the JSON object of an
// application/json body, or the data of an event stream's event.
func isJSONRPC(mediaType string, body []byte) bool {
	if mediaType == "text/event-stream" {
		body = sse.Parse(body).Data
	}
	var v struct {
		JSONRPC string `json:"jsonrpc"`
	}
	return json.Unmarshal(bytes.TrimSpace(body), &v) == nil && v.JSONRPC == "2.0"
}

// SaysDraining reports a JSON body whose "status" is "draining", as a
// replica's health endpoint (or MCP endpoint) answers while it drains.
func SaysDraining(body []byte) bool {
	var v struct {
		Status string `json:"status"`
	}
	return json.Unmarshal(body, &v) == nil && v.Status == "draining"
}

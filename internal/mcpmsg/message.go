// Package mcpmsg classifies JSON-RPC / MCP envelopes cheaply: it reads the
// members that routing needs (method, id, the tool or resource name, the
// protocol version in _meta) and skips the rest of the body unparsed.
package mcpmsg

import (
	"errors"
	"fmt"
	"strings"
)

// Kind says what a JSON-RPC message is.
type Kind uint8

// The JSON-RPC 2.0 message kinds.
const (
	KindInvalid      Kind = iota
	KindRequest           // has method and id
	KindNotification      // has method, no id
	KindResponse          // has result or error, and id
)

// Protocol revisions the gateway tells apart.
const (
	// Version20251125 is the last revision with sessions (Mcp-Session-Id).
	Version20251125 = "2025-11-25"
	// Version20260728 is the first stateless revision (SEP-2575, SEP-2567).
	Version20260728 = "2026-07-28"
)

// MetaKeyProtocolVersion is the _meta member that carries the protocol
// version on every 2026-07-28 request (SEP-2575).
const MetaKeyProtocolVersion = "io.modelcontextprotocol/protocolVersion"

// Message is what routing needs to know of a POST body. For a batch it
// describes the first request in it (Kind, Method, ID, Name) and counts all.
type Message struct {
	Kind   Kind
	Batch  bool
	Count  int    // messages in the body (1 unless Batch)
	Method string // "" for responses
	// ID is the raw JSON id (a string with its quotes, or a number); nil for
	// notifications.
	ID []byte
	// Name is params.name for tools/call and prompts/get, params.uri for
	// resources/read, params.taskId for tasks/*; "" otherwise.
	Name string
	// ProtocolVersion is params._meta["io.modelcontextprotocol/protocolVersion"].
	ProtocolVersion string
	// HasInitialize reports an initialize request anywhere in the body.
	HasInitialize bool
	// IdempotencyKey is params._meta["io.mcpfleet/idempotency-key"].
	IdempotencyKey string
	// Trace is the W3C trace context the message carries in params._meta
	// (SEP-414): traceparent, tracestate and baggage, as written.
	Trace TraceMeta
}

// TraceMeta is the trace context of a message's params._meta (SEP-414).
type TraceMeta struct {
	Traceparent, Tracestate, Baggage string
	// ParentAt is where the traceparent's JSON string (quotes included)
	// is in the body, [start, end); zero when absent. A gateway that
	// continues the trace rewrites it there (ReplaceAt).
	ParentAt [2]int
}

// ReplaceAt returns a copy of body with body[at[0]:at[1]] replaced by the
// JSON string of v. v must need no escaping (a traceparent does not).
func ReplaceAt(body []byte, at [2]int, v string) []byte {
	out := make([]byte, 0, len(body)-(at[1]-at[0])+len(v)+2)
	out = append(out, body[:at[0]]...)
	out = append(out, '"')
	out = append(out, v...)
	out = append(out, '"')
	return append(out, body[at[1]:]...)
}

// MetaKeyIdempotency is the _meta member by which a client marks a
// tools/call as one logical call however often it is sent; the
// Idempotency-Key header (IETF httpapi draft) says the same.
const MetaKeyIdempotency = "io.mcpfleet/idempotency-key"

// Errors returned by Parse. Both map to JSON-RPC errors with ErrorCode.
var (
	// ErrParse: the body is not JSON (JSON-RPC -32700).
	ErrParse = errors.New("parsing json-rpc message: invalid json")
	// ErrInvalidRequest: JSON, but not a JSON-RPC 2.0 message (-32600).
	ErrInvalidRequest = errors.New("parsing json-rpc message: not a json-rpc 2.0 message")
)

// errTwice: an object the gateway decides on (the message, its params,
// their _meta) names a member twice. Readers differ on which one counts
// (ErrDuplicateMember), so the message is refused rather than read as one
// of them: it is ErrInvalidRequest too.
var errTwice = fmt.Errorf("%w: %w", ErrInvalidRequest, ErrDuplicateMember)

// Parse classifies a POST body. It decodes only the members routing needs and
// validates the rest as JSON without building it. A message, its params or
// their _meta naming one member twice is ErrInvalidRequest (and
// ErrDuplicateMember): the gateway and its replica could read two messages
// in it.
func Parse(body []byte) (Message, error) {
	var m Message
	i := skipWS(body, 0)
	if i >= len(body) {
		return m, ErrParse
	}
	var end int
	var err error
	switch body[i] {
	case '{':
		m.Count = 1
		end, err = parseOne(body, i, &m)
	case '[':
		m.Batch = true
		end, err = parseBatch(body, i, &m)
	default:
		if _, verr := skipValue(body, i, 0); verr != nil {
			return m, ErrParse
		}
		return m, ErrInvalidRequest
	}
	if err != nil {
		return m, err
	}
	if skipWS(body, end) != len(body) {
		return m, ErrParse
	}
	return m, nil
}

// parseBatch reads the batch at b[i] == '[' into m: the first request in
// it (or its first message), and the count of all.
func parseBatch(b []byte, i int, m *Message) (int, error) {
	return eachInBatch(b, i, func(one *Message) error {
		m.Count++
		m.HasInitialize = m.HasInitialize || one.HasInitialize
		if m.Kind == KindInvalid || (m.Kind != KindRequest && one.Kind == KindRequest) {
			one.Batch, one.Count, one.HasInitialize = true, m.Count, m.HasInitialize
			*m = *one
		}
		return nil
	})
}

// ErrBatchTooLarge: a batch of more messages than allowed (JSON-RPC -32600).
var ErrBatchTooLarge = errors.New("parsing json-rpc batch: too many messages")

// SplitBatch returns the messages of a batch body, each classified as Parse
// classifies a message that comes alone. It is strict: the body is one JSON
// array of 1 to max objects (max <= 0: any number), each a JSON-RPC 2.0
// message, and nothing else. An empty array, an element that is not an
// object (a nested array, a number, null) or not a message is
// ErrInvalidRequest (JSON-RPC 2.0 section 6); bytes that are not JSON are
// ErrParse; one element past max is ErrBatchTooLarge, found without
// reading the elements after it.
func SplitBatch(body []byte, max int) ([]Message, error) {
	i := skipWS(body, 0)
	if i >= len(body) || body[i] != '[' {
		return nil, ErrInvalidRequest
	}
	var out []Message
	end, err := eachInBatch(body, i, func(one *Message) error {
		if max > 0 && len(out) == max {
			return ErrBatchTooLarge
		}
		out = append(out, *one)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if skipWS(body, end) != len(body) {
		return nil, ErrParse
	}
	return out, nil
}

// eachInBatch walks the batch at b[i] == '[' and calls fn with each message
// in it, in order. It returns the offset past the batch.
func eachInBatch(b []byte, i int, fn func(one *Message) error) (int, error) {
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, ErrInvalidRequest // an empty batch is invalid (JSON-RPC 2.0 section 6)
	}
	for {
		i = skipWS(b, i)
		if i >= len(b) {
			return 0, ErrParse
		}
		var one Message
		end, err := 0, error(nil)
		if b[i] == '{' {
			one.Count = 1
			end, err = parseOne(b, i, &one)
		} else {
			if end, err = skipValue(b, i, 1); err == nil {
				err = ErrInvalidRequest
			} else {
				err = ErrParse
			}
		}
		if err == nil {
			err = fn(&one)
		}
		if err != nil {
			return 0, err
		}
		i = skipWS(b, end)
		if i >= len(b) {
			return 0, ErrParse
		}
		switch b[i] {
		case ',':
			i++
		case ']':
			return i + 1, nil
		default:
			return 0, ErrParse
		}
	}
}

// parseOne reads one message object at b[i] == '{'.
func parseOne(b []byte, i int, m *Message) (int, error) {
	var version, params []byte
	var paramsAt int
	var hasResult bool
	var seen keySet
	end, err := eachMember(b, i, 1, func(key []byte, s, e int) error {
		if seen.add(key) {
			return errTwice
		}
		switch string(key) {
		case "jsonrpc":
			version = b[s:e]
		case "method":
			if b[s] != '"' {
				return ErrInvalidRequest
			}
			v, err := rawString(b[s:e])
			m.Method = v
			return err
		case "id":
			if b[s] != '"' && b[s] != '-' && (b[s] < '0' || b[s] > '9') && b[s] != 'n' {
				return ErrInvalidRequest
			}
			if b[s] != 'n' { // "id": null is a response to an unparseable request
				m.ID = b[s:e]
			}
		case "params":
			params, paramsAt = b[s:e], s
		case "result", "error":
			hasResult = true
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrInvalidRequest) {
			return 0, err
		}
		return 0, ErrParse
	}
	if string(version) != `"2.0"` {
		return 0, ErrInvalidRequest
	}
	switch {
	case m.Method != "" && m.ID != nil:
		m.Kind = KindRequest
	case m.Method != "":
		m.Kind = KindNotification
	case hasResult:
		m.Kind = KindResponse
	default:
		return 0, ErrInvalidRequest
	}
	m.HasInitialize = m.Method == "initialize"
	if m.Method != "" && len(params) > 0 && params[0] == '{' {
		if err := parseParams(params, paramsAt, m); err != nil {
			return 0, err
		}
	}
	return end, nil
}

// nameMember says which params member names the target of a method, the
// value mirrored in the Mcp-Name header (SEP-2243) and used for task routing.
func nameMember(method string) string {
	switch {
	case method == "tools/call", method == "prompts/get":
		return "name"
	case method == "resources/read":
		return "uri"
	case strings.HasPrefix(method, "tasks/"):
		return "taskId"
	}
	return ""
}

func parseParams(p []byte, at int, m *Message) error {
	want := nameMember(m.Method)
	var seen keySet
	_, err := eachMember(p, 0, 2, func(key []byte, s, e int) error {
		if seen.add(key) {
			return errTwice
		}
		switch {
		case want != "" && string(key) == want && p[s] == '"':
			v, err := rawString(p[s:e])
			m.Name = v
			return err
		case string(key) == "_meta" && p[s] == '{':
			var inMeta keySet
			_, err := eachMember(p[s:e], 0, 3, func(k []byte, ms, me int) error {
				if inMeta.add(k) {
					return errTwice
				}
				if p[s+ms] != '"' {
					return nil
				}
				switch string(k) {
				case MetaKeyProtocolVersion:
					v, err := rawString(p[s+ms : s+me])
					m.ProtocolVersion = v
					return err
				case MetaKeyIdempotency:
					v, err := rawString(p[s+ms : s+me])
					m.IdempotencyKey = v
					return err
				case "traceparent":
					v, err := rawString(p[s+ms : s+me])
					m.Trace.Traceparent, m.Trace.ParentAt = v, [2]int{at + s + ms, at + s + me}
					return err
				case "tracestate":
					v, err := rawString(p[s+ms : s+me])
					m.Trace.Tracestate = v
					return err
				case "baggage":
					v, err := rawString(p[s+ms : s+me])
					m.Trace.Baggage = v
					return err
				}
				return nil
			})
			return err
		}
		return nil
	})
	return err
}

// rawString decodes a complete JSON string token.
func rawString(raw []byte) (string, error) {
	_, escaped, err := scanString(raw, 0)
	if err != nil {
		return "", err
	}
	return stringValue(raw, escaped)
}

package mcpmsg

import (
	"encoding/json"
	"strconv"
	"time"
)

// JSON-RPC error codes the gateway answers with.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeInternalError  = -32603
	// CodeSessionNotFound answers a request for an unknown or ended session,
	// with HTTP 404, so that clients re-initialize (2025-11-25 transports,
	// "Session Management").
	CodeSessionNotFound = -32001
	// CodeHeaderMismatch answers a request whose Mcp-Method or Mcp-Name header
	// disagrees with its body (SEP-2243).
	CodeHeaderMismatch = -32020
	// CodeRateLimited answers a call a limit refused, with HTTP 429 and
	// data.retryAfterMs (SEP-3304, "Standardize Rate-Limiting Errors").
	CodeRateLimited = -32023
	// CodeForbidden answers a request an authorization rule (or the
	// default) denied, with HTTP 403 and data.rule naming the rule.
	CodeForbidden = -32003
)

// Error is a JSON-RPC error the gateway answers itself, with the HTTP status
// it goes with.
type Error struct {
	Status  int
	Code    int
	Message string
	// Data, if not nil, is the error's data member, raw JSON.
	Data []byte
	// RetryAfter, when not 0, is when the client may try again: the
	// answer carries it as Retry-After, in whole seconds rounded up (RFC
	// 9110, section 10.2.3), at least 1.
	RetryAfter time.Duration
}

// Error returns the message, so an *Error can travel as an error.
func (e *Error) Error() string { return e.Message }

// AppendResponse appends the JSON-RPC error response for id (raw JSON; nil
// means null) to dst.
func (e *Error) AppendResponse(dst []byte, id []byte) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	if len(id) == 0 {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, id...)
	}
	dst = append(dst, `,"error":{"code":`...)
	dst = strconv.AppendInt(dst, int64(e.Code), 10)
	dst = append(dst, `,"message":`...)
	msg, _ := json.Marshal(e.Message) // a string always marshals
	dst = append(dst, msg...)
	if e.Data != nil {
		dst = append(dst, `,"data":`...)
		dst = append(dst, e.Data...)
	}
	return append(dst, "}}\n"...)
}

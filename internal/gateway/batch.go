package gateway

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/mcpfleet/mcpfleet/internal/limit"
	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
)

// Batches (docs/GATEWAY.md, "Batches and limits"). JSON-RPC batches were
// part of MCP until 2025-03-26 and were removed in 2025-06-18 (its
// changelog: "Remove support for JSON-RPC batching"). A batch of a request
// or session of 2025-06-18 or later is refused here, 400 with -32600,
// before any replica sees it. An older one is split into its messages
// (mcpmsg.SplitBatch, strict, at most max_batch) so that admission decides
// each request in it as if it came alone, all or none. The cache,
// idempotency records and retries after delivery skip batches.

// DefaultMaxBatch is the default bound on a batch's messages (max_batch).
const DefaultMaxBatch = 16

// versionWithoutBatches is the first protocol revision without batches.
const versionWithoutBatches = "2025-06-18"

var errBatchUnsupported = &mcpmsg.Error{Status: http.StatusBadRequest, Code: mcpmsg.CodeInvalidRequest,
	Message: "JSON-RPC batches are not supported in protocol version " + versionWithoutBatches + " and later"}

var errBatchInitialize = &mcpmsg.Error{Status: http.StatusBadRequest, Code: mcpmsg.CodeInvalidRequest,
	Message: "initialize must not be part of a JSON-RPC batch"}

// splitBatch refuses a batch its protocol version does not allow, or one
// of more than max_batch messages, and otherwise keeps its messages in
// q.batch. The version is the MCP-Protocol-Version header, which every
// request after initialize carries from 2025-06-18 on, or any message's
// _meta version; without either the request is taken as 2025-03-26, as
// the transport says a server should (2025-06-18, "Protocol Version
// Header").
func (g *Gateway) splitBatch(q *request) *mcpmsg.Error {
	if q.era == mcpmsg.EraStateless || batchlessVersion(q.version) {
		return errBatchUnsupported
	}
	if q.msg.HasInitialize {
		// 2025-03-26, "Lifecycle": the initialization request MUST NOT
		// be part of a batch.
		return errBatchInitialize
	}
	msgs, err := mcpmsg.SplitBatch(q.body, g.opts.MaxBatch)
	switch {
	case errors.Is(err, mcpmsg.ErrBatchTooLarge):
		return &mcpmsg.Error{Status: http.StatusBadRequest, Code: mcpmsg.CodeInvalidRequest,
			Message: "a JSON-RPC batch may hold at most " + strconv.Itoa(g.opts.MaxBatch) + " messages (max_batch)"}
	case errors.Is(err, mcpmsg.ErrParse):
		return errParse
	case errors.Is(err, mcpmsg.ErrDuplicateMember):
		return errTwice
	case err != nil:
		return errInvalidRequest
	}
	for i := range msgs {
		if batchlessVersion(msgs[i].ProtocolVersion) {
			return errBatchUnsupported
		}
	}
	q.batch = msgs
	return nil
}

// batchlessVersion reports whether protocol version v (a date, "" when
// unknown) has no batches. Versions are dates and compare as strings.
func batchlessVersion(v string) bool { return v != "" && v >= versionWithoutBatches }

// batchCalls returns the requests of a batch as admission sees them.
func batchCalls(msgs []mcpmsg.Message) []limit.BatchCall {
	calls := make([]limit.BatchCall, 0, len(msgs))
	for i := range msgs {
		if msgs[i].Kind == mcpmsg.KindRequest {
			calls = append(calls, limit.BatchCall{Method: msgs[i].Method, Tool: msgs[i].Name})
		}
	}
	return calls
}

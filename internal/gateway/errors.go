package gateway

import (
	"net/http"
	"strconv"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
)

// The gateway's own answers. Each is a JSON-RPC error with its HTTP status;
// writeError is the one place that turns them into responses.
var (
	errSessionNotFound = &mcpmsg.Error{Status: http.StatusNotFound, Code: mcpmsg.CodeSessionNotFound, Message: "session not found"}
	errBodyTooLarge    = &mcpmsg.Error{Status: http.StatusRequestEntityTooLarge, Code: mcpmsg.CodeInvalidRequest, Message: "request body too large"}
	errBodyRead        = &mcpmsg.Error{Status: http.StatusBadRequest, Code: mcpmsg.CodeParseError, Message: "reading request body failed"}
	errParse           = &mcpmsg.Error{Status: http.StatusBadRequest, Code: mcpmsg.CodeParseError, Message: "parse error"}
	errInvalidRequest  = &mcpmsg.Error{Status: http.StatusBadRequest, Code: mcpmsg.CodeInvalidRequest, Message: "invalid request"}
	// errTwice: the message, its params or their _meta name a member twice.
	// The member is not named back: the answer repeats nothing of the
	// body.
	errTwice           = &mcpmsg.Error{Status: http.StatusBadRequest, Code: mcpmsg.CodeInvalidRequest, Message: "invalid request: a JSON object names one member twice"}
	errUnreachable     = &mcpmsg.Error{Status: http.StatusBadGateway, Code: mcpmsg.CodeInternalError, Message: "no replica could be reached"}
	errAfterDelivery   = &mcpmsg.Error{Status: http.StatusBadGateway, Code: mcpmsg.CodeInternalError, Message: "replica failed after the request was delivered; not retried"}
	errHost            = &mcpmsg.Error{Status: http.StatusForbidden, Code: mcpmsg.CodeInvalidRequest, Message: "host not allowed (DNS rebinding protection)"}
	errOrigin          = &mcpmsg.Error{Status: http.StatusForbidden, Code: mcpmsg.CodeInvalidRequest, Message: "origin not allowed"}
	errMethod          = &mcpmsg.Error{Status: http.StatusMethodNotAllowed, Code: mcpmsg.CodeInvalidRequest, Message: "method not allowed"}
	errSessionRepeated = &mcpmsg.Error{Status: http.StatusBadRequest, Code: mcpmsg.CodeInvalidRequest, Message: "more than one Mcp-Session-Id header"}
	// errClosing answers a new 2024-11-05 stream once the gateway has
	// ended its standalone streams: it would be cut at once, and this
	// transport has no resume; the client opens it again elsewhere.
	errClosing = &mcpmsg.Error{Status: http.StatusServiceUnavailable, Code: mcpmsg.CodeInternalError, Message: "the gateway is shutting down; open the stream again", RetryAfter: time.Second}
)

// noReplicaError answers a request that no replica can take (every one
// down, draining, held or quarantined): 503, and come back after one round
// of health checks (interval; at least a second), when one may be up again.
func noReplicaError(interval time.Duration) *mcpmsg.Error {
	retry := max(interval.Truncate(time.Second), time.Second)
	if retry < interval {
		retry += time.Second // whole seconds, rounded up
	}
	ms := strconv.FormatInt(retry.Milliseconds(), 10)
	return &mcpmsg.Error{Status: http.StatusServiceUnavailable, Code: mcpmsg.CodeInternalError,
		Message: "no replica can take new work; retry after " + ms + " ms",
		Data:    []byte(`{"retryAfterMs":` + ms + `}`), RetryAfter: retry}
}

func headerMismatch(msg string) *mcpmsg.Error {
	return &mcpmsg.Error{Status: http.StatusBadRequest, Code: mcpmsg.CodeHeaderMismatch, Message: msg}
}

// writeError answers with a JSON-RPC error. id is the request's raw JSON id,
// nil when unknown.
func writeError(w http.ResponseWriter, e *mcpmsg.Error, id []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	if e.Status == http.StatusMethodNotAllowed && h.Get("Allow") == "" {
		h.Set("Allow", "GET, POST, DELETE")
	}
	if e.RetryAfter > 0 {
		setRetryAfter(w, max(e.RetryAfter, time.Second))
	}
	w.WriteHeader(e.Status)
	w.Write(e.AppendResponse(make([]byte, 0, 128), id))
}

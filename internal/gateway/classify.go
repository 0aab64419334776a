package gateway

import (
	"bytes"
	"errors"
	"github.com/mcpfleet/mcpfleet/internal/authz"
	"io"
	"net/http"

	"github.com/mcpfleet/mcpfleet/internal/identity"
	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
	"github.com/mcpfleet/mcpfleet/internal/session"
)

// request is what the gateway knows of one incoming request once classified.
type request struct {
	body      []byte         // the POST body, read whole (bounded)
	msg       mcpmsg.Message // zero unless POST
	era       mcpmsg.Era
	sessionID string // Mcp-Session-Id as the client holds it (sealed), "" when absent
	// upstreamSession is the replica's own session ID, opened from sessionID.
	upstreamSession string
	// batch is a batch's messages, each as if alone (splitBatch); nil
	// unless msg.Batch.
	batch    []mcpmsg.Message
	label    string // the JSON-RPC method as metrics show it
	version  string // MCP-Protocol-Version as the client sent it
	key      uint64 // the caller's routing key, once keyed (routingKey)
	keyed    bool
	verified *identity.Verified // the caller, when the gateway verified its token
	// caller is who the request's caller is to the sessions, endpoints
	// and tasks it opens or uses (binding.go); the zero Opener for nobody.
	caller session.Opener

	// authz is what the rules read of the request, policy the rules that
	// decided it; nil when authorization is off. Its answer's lists are
	// filtered by them (authzlist.go).
	authz  *authz.Input
	policy *authz.Policy

	// target is the request target at the replica; "" means its endpoint
	// (a 2024-11-05 message: the endpoint its sealed token names).
	target string
}

// id returns the request's raw JSON-RPC id for error answers.
func (q *request) id() []byte {
	if q == nil || q.msg.Kind != mcpmsg.KindRequest || q.msg.Batch {
		return nil
	}
	return q.msg.ID
}

// classify reads the body (POST) and works out era, method and session. It
// decodes only the members routing needs (mcpmsg.Parse).
func (g *Gateway) classify(w http.ResponseWriter, r *http.Request, q *request) (*request, *mcpmsg.Error) {
	*q = request{label: httpMethodLabel(r.Method)}
	switch ids := r.Header[mcpmsg.HeaderSessionID]; {
	case len(ids) > 1:
		return q, errSessionRepeated
	case len(ids) == 1 && ids[0] == "":
		// A header that names no session is not the absence of one: sent
		// on as a new caller, it would reach a replica outside any session.
		g.metrics.sessionMisses.WithLabelValues("malformed").Inc()
		return q, errSessionNotFound
	case len(ids) == 1:
		q.sessionID = ids[0]
	}
	version := r.Header.Get(mcpmsg.HeaderProtocolVersion)
	q.version = version
	if r.Method != http.MethodPost {
		q.era = mcpmsg.EraOf(q.sessionID, version, nil)
		return q, nil
	}
	body, err := g.readBody(w, r)
	if err != nil {
		return q, err
	}
	q.body = body
	q.era = mcpmsg.EraLegacy
	msg, perr := parseMessage(body)
	if perr != nil {
		return q, perr
	}
	q.msg = msg
	q.label = mcpmsg.MethodLabel(msg.Method)
	q.era = mcpmsg.EraOf(q.sessionID, version, &q.msg)
	if q.msg.Batch {
		if err := g.splitBatch(q); err != nil {
			return q, err
		}
	}
	if q.era == mcpmsg.EraStateless && mcpmsg.IsStatelessVersion(version) {
		// SEP-2243: Mcp-Method and Mcp-Name mirror the body; intermediaries
		// route on them, so a disagreement is refused before routing.
		if err := mcpmsg.CheckHeaders(r.Header.Get(mcpmsg.HeaderMethod), r.Header.Get(mcpmsg.HeaderName), &q.msg); err != nil {
			return q, headerMismatch(err.Error())
		}
	}
	return q, nil
}

// parseMessage classifies a body. One that is not JSON-RPC is answered
// here, as a server would (JSON-RPC 2.0 section 5.1): there is nothing to
// route on.
func parseMessage(body []byte) (mcpmsg.Message, *mcpmsg.Error) {
	msg, err := mcpmsg.Parse(body)
	switch {
	case err == nil:
		return msg, nil
	case errors.Is(err, mcpmsg.ErrParse):
		return msg, errParse
	case errors.Is(err, mcpmsg.ErrDuplicateMember):
		return msg, errTwice
	}
	return msg, errInvalidRequest
}

// readBody reads the whole body within the size bound and the read timeout.
func (g *Gateway) readBody(w http.ResponseWriter, r *http.Request) (_ []byte, fail *mcpmsg.Error) {
	if r.ContentLength > g.opts.MaxBodyBytes {
		return nil, errBodyTooLarge
	}
	// After a failed read the past deadline stays: net/http's server reads
	// what is left of a body before it answers, which without it would
	// wait for a client that sends nothing more for as long as that client
	// keeps the connection.
	bt := armLate(w, readDeadline, g.opts.BodyReadTimeout)
	defer func() { bt.disarm(fail == nil) }()
	if r.ContentLength >= 0 {
		// The length is known and within the bound: one allocation, and
		// the body must end where its length says.
		body := make([]byte, r.ContentLength)
		if _, err := io.ReadFull(r.Body, body); err != nil {
			return nil, errBodyRead
		}
		return body, nil
	}
	buf := bytes.NewBuffer(make([]byte, 0, 512))
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, g.opts.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, errBodyTooLarge
		}
		if !errors.Is(err, io.EOF) {
			return nil, errBodyRead
		}
	}
	return buf.Bytes(), nil
}

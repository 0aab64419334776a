package gateway

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// A 2024-11-05 message is POSTed to the gateway's messages path with the
// sealed endpoint in its sessionId (ssestream.go). The gateway reads and
// classifies the body as it reads every body (bounded, strict JSON-RPC),
// opens the endpoint and sends the body to the replica's own endpoint,
// answering the replica's answer (202 Accepted, normally) as it came. The
// message's answer flows on the session's stream, through whichever gateway
// process relays it. Limits apply as to a POST on the MCP endpoint, for
// as long as the POST lasts (the replica answers 202 at once, so a
// concurrency slot or a tool cap holds only that long); the cache and
// idempotency are not applied to this transport (docs/GATEWAY.md says why).

var (
	errNoSessionParam = &mcpmsg.Error{Status: http.StatusBadRequest, Code: mcpmsg.CodeInvalidRequest, Message: "no sessionId in the query"}
	errQueryParam     = &mcpmsg.Error{Status: http.StatusBadRequest, Code: mcpmsg.CodeInvalidRequest, Message: "the query may hold nothing but one sessionId"}
)

// serveSSEMessage forwards one POSTed message to the replica its sealed
// endpoint names. An endpoint that does not open, whose replica has left
// the fleet or cannot be reached, or that the replica no longer knows
// (404), is answered 404 with -32001, as a lost session is. A replica that
// is draining or down still gets its open sessions' messages.
func (g *Gateway) serveSSEMessage(w http.ResponseWriter, r *http.Request, q *request, rec *record) {
	token, err := messagesToken(r.URL.RawQuery)
	if err == errSessionNotFound {
		g.metrics.sessionMisses.WithLabelValues("malformed").Inc()
	}
	if err != nil {
		rec.reject(w, err, nil)
		return
	}
	if q.body, err = g.readBody(w, r); err != nil {
		rec.reject(w, err, nil)
		return
	}
	if q.msg, err = parseMessage(q.body); err != nil {
		rec.reject(w, err, nil)
		return
	}
	q.label = mcpmsg.MethodLabel(q.msg.Method)
	if g.tr != nil {
		r = g.startSpan(r, q, rec)
	}
	if q.msg.Batch {
		if err := g.splitBatch(q); err != nil {
			rec.reject(w, err, nil)
			return
		}
	}
	if !g.authorize(w, r, q, rec) {
		return
	}
	rep, err := g.openEndpoint(token, q)
	if err != nil {
		rec.reject(w, err, q.id())
		return
	}
	// Admitted as a POST on the MCP endpoint is, once its session is known
	// to be one.
	adm, ok := g.admit(w, r, q, rec)
	if !ok {
		return
	}
	defer adm.Done()
	// The message's calls wait on the session's stream from now: their
	// answers may come there before the replica's 202 comes here.
	ids := g.followSSECalls(rep, q)
	// The client's own context: the message's call runs in the replica
	// apart from its POST (the replica answers 202 and goes on), so a
	// client that leaves cuts nothing but a wait, which a replica that never
	// answers a lost session (the TypeScript everything server) would make
	// endless.
	res := g.send(r.Context(), r, q, target{pinned: rep}, rec)
	if res.err == errAfterDelivery {
		g.dropSSECalls(rep, q, ids)
		g.lostBeforeAnswer(w, nil, q, rec)
		return
	}
	if res.err != nil {
		g.dropSSECalls(rep, q, ids)
		rec.reject(w, res.err, q.id())
		return
	}
	resp := res.resp
	defer rep.Release()
	if resp.StatusCode >= 300 {
		g.dropSSECalls(rep, q, ids) // refused: their answers come here, or never
	}
	if resp.StatusCode == http.StatusNotFound {
		resp.Body.Close()
		g.metrics.sessionMisses.WithLabelValues("ended").Inc()
		rec.reject(w, errSessionNotFound, q.id())
		return
	}
	g.relayVerbatim(w, r, resp, rec)
}

// messagesToken returns the sealed endpoint in a messages path's query,
// which must be "sessionId=" and the token, in one spelling: no other
// parameter (400), no second sessionId (400), and no escape, "+" or ";"
// in the value, which net/url would decode or refuse (404, as a malformed
// session ID is). The token itself is checked by opening it.
func messagesToken(rawQuery string) (string, *mcpmsg.Error) {
	if rawQuery == "" {
		return "", errNoSessionParam
	}
	var token string
	n := 0
	for part := range strings.SplitSeq(rawQuery, "&") {
		key, value, ok := strings.Cut(part, "=")
		if !ok || key != "sessionId" {
			return "", errQueryParam
		}
		token, n = value, n+1
	}
	switch {
	case n > 1:
		return "", errQueryParam
	case token == "" || strings.ContainsAny(token, "%+;"):
		return "", errSessionNotFound
	}
	return token, nil
}

// openEndpoint opens a sealed endpoint and returns its replica, with the
// replica's own endpoint as the request's target. An endpoint opened by
// another caller, or older than the maximum age, is not found.
func (g *Gateway) openEndpoint(token string, q *request) (*upstream.Replica, *mcpmsg.Error) {
	e, err := g.keys.OpenEndpoint(token)
	if err != nil {
		g.metrics.sessionMisses.WithLabelValues(openReason(err)).Inc()
		return nil, errSessionNotFound
	}
	if !g.checkEndpoint(e, q) {
		return nil, errSessionNotFound
	}
	rep := g.fleet.Snapshot().Lookup(e.Replica)
	if rep == nil {
		g.metrics.sessionMisses.WithLabelValues("replica_gone").Inc()
		return nil, errSessionNotFound
	}
	q.target = e.Target
	return rep, nil
}

// endpoint is the replica's endpoint that the request goes to: for the
// 2024-11-05 transport its SSE URL (its messages' targets are on that
// origin), else its MCP endpoint.
func (q *request) endpoint(rep *upstream.Replica) *url.URL {
	if q.era == mcpmsg.EraSSE {
		return rep.SSEURL()
	}
	return rep.URL()
}

package gateway

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/idem"
	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
	"github.com/mcpfleet/mcpfleet/internal/sse"
)

// A tools/call that names itself one logical call (an Idempotency-Key
// header, the IETF httpapi draft; or the _meta member
// io.mcpfleet/idempotency-key) runs at most once per caller and key while
// its record lives. So does a legacy re-send of the same JSON-RPC id within
// its session, which the 2025-11-25 base protocol forbids a client to reuse.
// A duplicate that arrives while the first runs waits for the first's
// answer; one that arrives later gets the recorded answer. A record keeps
// the digest of its request (mcpmsg.RequestDigest) and answers only the
// same request: a key reused with another payload is refused (422), an id
// reused for another call is a new call. See docs/GATEWAY.md,
// "Idempotency", for the guarantee and its limits.

// claim is a request's hold on its idempotency record.
type claim struct {
	key, token string
	digest     string        // the request's (mcpmsg.RequestDigest)
	legacy     bool          // keyed by session and JSON-RPC id, not by a key the client chose
	ttl        time.Duration // how long the answer is kept
	result     []byte        // the final response, once relayed
	sse        bool          // the client got its answer as an SSE stream
}

// sessionResendTTL is how long the answer to a legacy call is kept for a
// re-send of its id: re-sends follow within seconds, and every legacy call
// takes a record.
const sessionResendTTL = 10 * time.Minute

// errKeyReused refuses an idempotency key reused with another payload: the
// IETF httpapi Idempotency-Key draft's 422, as a JSON-RPC invalid params.
var errKeyReused = &mcpmsg.Error{Status: http.StatusUnprocessableEntity, Code: codeInvalidParams,
	Message: "idempotency key reused with another request", Data: []byte(`{"reason":"idempotency_key_reused"}`)}

// idempotencyKey returns the claim a request must take to run at most
// once, not yet taken, or nil if it names no logical call. The scope is
// the caller's routing key (an HMAC: no credential) and the tool, or the
// sealed session.
func (g *Gateway) idempotencyKey(r *http.Request, q *request) *claim {
	if g.idem == nil || q.msg.Method != "tools/call" || q.msg.Batch || q.msg.Kind != mcpmsg.KindRequest {
		return nil
	}
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		key = q.msg.IdempotencyKey
	}
	switch {
	case key != "":
		return &claim{key: idem.Digest("key\x00"+strconv.FormatUint(g.routingKey(r, q), 16)+"\x00"+q.msg.Name, key),
			digest: mcpmsg.RequestDigest(q.body), ttl: g.opts.IdempotencyTTL}
	case q.sessionID != "":
		return &claim{key: idem.Digest("session\x00"+q.sessionID, string(q.msg.ID)), legacy: true,
			digest: mcpmsg.RequestDigest(q.body), ttl: min(sessionResendTTL, g.opts.IdempotencyTTL)}
	}
	return nil
}

// claimOrAnswer takes the request's idempotency record. It returns the claim
// when this request must run; nil and true when it answered the client (the
// first execution's result, or the refusal of a key reused with another
// payload); nil and false when the request runs without a record (the store
// is unavailable: fail open; or its id is another running call's).
func (g *Gateway) claimOrAnswer(ctx context.Context, w http.ResponseWriter, r *http.Request, q *request, c *claim, rec *record) (*claim, bool) {
	reuse := idem.Refuse
	if c.legacy {
		reuse = idem.Replace
	}
	for range 8 { // a released claim is taken again; bounded, for a flapping store
		out, err := g.idem.Claim(ctx, c.key, c.digest, g.opts.IdempotencyLease, reuse)
		if err == nil && out.State == idem.Running {
			g.metrics.idempotency.WithLabelValues("waited").Inc()
			rec.idem = "waited"
			out, err = g.idem.Wait(ctx, c.key, c.digest)
		}
		switch {
		case ctx.Err() != nil:
			rec.clientGone = true
			return nil, true
		case err != nil:
			g.metrics.idempotency.WithLabelValues("unavailable").Inc()
			rec.idem = "unavailable"
			g.log.Warn("idempotency store unavailable: running without deduplication", "error", err)
			return nil, false
		case out.State == idem.Mismatch && !c.legacy:
			g.metrics.idempotency.WithLabelValues("key_reused").Inc()
			rec.idem = "key_reused"
			rec.reject(w, errKeyReused, q.id())
			return nil, true
		case out.Reused:
			g.noteIDReused(q, out.FirstReuse, rec)
			if out.State == idem.Mismatch {
				return nil, false // the id's record is another call's, still running
			}
			c.token = out.Token
			return c, false
		case out.State == idem.Claimed:
			rec.idem = "claimed"
			c.token = out.Token
			return c, false
		case out.State == idem.Done:
			g.metrics.idempotency.WithLabelValues("replayed").Inc()
			rec.idem = "replayed"
			g.answerRecorded(w, r, q, out.Result, rec)
			return nil, true
		}
	}
	return nil, false
}

// noteIDReused counts a legacy request whose JSON-RPC id its session used
// before for another call, and logs the first of a record's.
func (g *Gateway) noteIDReused(q *request, first bool, rec *record) {
	g.metrics.idReused.Inc()
	rec.idem = "id_reused"
	if first {
		g.log.Info("a client reused a JSON-RPC id of its session for another request: it runs as a new call, never answered from the first one's record",
			"method", q.label, "era", q.era.String())
	}
}

// Recorded answers start with how the client got them, so that a
// duplicate gets the same framing.
const (
	recordedJSON = 'J'
	recordedSSE  = 'S'
)

// recorded is what a claim records: the framing, then the final response.
func (c *claim) recorded() []byte {
	tag := byte(recordedJSON)
	if c.sse {
		tag = recordedSSE
	}
	return append([]byte{tag}, c.result...)
}

// answerRecorded answers a duplicate with the recorded response, under the
// duplicate's own id: as one SSE event if the first answer was a stream
// and the duplicate accepts one, else as JSON.
func (g *Gateway) answerRecorded(w http.ResponseWriter, r *http.Request, q *request, result []byte, rec *record) {
	stream := false
	if len(result) > 0 && (result[0] == recordedJSON || result[0] == recordedSSE) {
		stream = result[0] == recordedSSE && acceptsEventStream(r.Header.Values("Accept"))
		result = result[1:]
	}
	msg, err := mcpmsg.WithID(result, q.msg.ID)
	if err != nil {
		rec.reject(w, errUnreachable, q.id())
		return
	}
	rec.status, rec.replica = http.StatusOK, "recorded"
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.Write(msg)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	cw := newClientWriter(w, g.opts.WriteTimeout)
	sw := sse.NewWriter(cw, cw, 0)
	if sw.WriteEvent(jsonEvent(msg)) != nil {
		rec.clientGone = true
	}
	sw.Close()
	rec.events++
}

// settle ends a claim after the request: the final response is recorded for
// duplicates; without one (never delivered, cancelled, cut) the claim is
// released and a re-issue runs again.
func (g *Gateway) settle(c *claim) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(g.base), g.opts.DialTimeout)
	defer cancel()
	if c.result != nil {
		err := g.idem.Complete(ctx, c.key, c.token, c.recorded(), c.ttl)
		if err == nil {
			return
		}
		if !errors.Is(err, idem.ErrTooLarge) {
			g.log.Warn("recording an idempotent result failed", "error", err)
			return
		}
	}
	if err := g.idem.Release(ctx, c.key, c.token); err != nil && !errors.Is(err, idem.ErrNotOwner) {
		g.log.Warn("releasing an idempotency claim failed", "error", err)
	}
}

// noteResult keeps msg as the claim's result if it is the final response
// and a success. A failed call (a JSON-RPC error, a tool result with
// isError, such as a call its replica cut off while shutting down) is not
// recorded: its claim is released and a re-issue runs again, instead of
// replaying the failure to every re-issue.
func noteResult(rec *record, q *request, msg []byte) {
	if rec.claim != nil && rec.claim.result == nil && mcpmsg.IsResponseTo(msg, q.msg.ID) && !mcpmsg.ResponseFailed(msg) {
		rec.claim.result = append([]byte(nil), msg...)
		rec.claim.sse = rec.claim.sse || rec.early
	}
}

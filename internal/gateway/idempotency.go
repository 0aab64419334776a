package gateway

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/idem"
	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
)

// A tools/call that names itself one logical call (an Idempotency-Key
// header, the IETF httpapi draft; or the _meta member
// io.mcpfleet/idempotency-key) runs at most once per caller and key while
// its record lives. So does a legacy re-send of the same JSON-RPC id within
// its session, which the 2025-11-25 base protocol forbids a client to reuse.
// A duplicate that arrives while the first runs waits for the first's
// answer; one that arrives later gets the recorded answer. See
// docs/GATEWAY.md, "Idempotency", for the guarantee and its limits.

// claim is a request's hold on its idempotency record.
type claim struct {
	key, token string
	ttl        time.Duration // how long the answer is kept
	result     []byte        // the final response, once relayed
}

// sessionResendTTL is how long the answer to a legacy call is kept for a
// re-send of its id: re-sends follow within seconds, and every legacy call
// takes a record.
const sessionResendTTL = 10 * time.Minute

// idempotencyKey returns the store key of a request that must run at most
// once, or "" if it names no logical call. The scope is the caller's
// routing key (an HMAC: no credential) and the tool, or the sealed session.
func (g *Gateway) idempotencyKey(r *http.Request, q *request) (string, time.Duration) {
	if g.idem == nil || q.msg.Method != "tools/call" || q.msg.Batch || q.msg.Kind != mcpmsg.KindRequest {
		return "", 0
	}
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		key = q.msg.IdempotencyKey
	}
	switch {
	case key != "":
		return idem.Digest("key\x00"+strconv.FormatUint(g.routingKey(r, q), 16)+"\x00"+q.msg.Name, key), g.opts.IdempotencyTTL
	case q.sessionID != "":
		return idem.Digest("session\x00"+q.sessionID, string(q.msg.ID)), min(sessionResendTTL, g.opts.IdempotencyTTL)
	}
	return "", 0
}

// claimOrAnswer takes the request's idempotency record. It returns the claim
// when this request must run; nil and true when it answered the client with
// the first execution's result; nil and false when the store is unavailable
// (fail open: run without deduplication).
func (g *Gateway) claimOrAnswer(ctx context.Context, w http.ResponseWriter, q *request, key string, ttl time.Duration, rec *record) (*claim, bool) {
	for range 8 { // a released claim is taken again; bounded, for a flapping store
		out, err := g.idem.Claim(ctx, key, g.opts.IdempotencyLease)
		if err == nil && out.State == idem.Running {
			g.metrics.idempotency.WithLabelValues("waited").Inc()
			rec.idem = "waited"
			out, err = g.idem.Wait(ctx, key)
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
		case out.State == idem.Claimed:
			rec.idem = "claimed"
			return &claim{key: key, token: out.Token, ttl: ttl}, false
		case out.State == idem.Done:
			g.metrics.idempotency.WithLabelValues("replayed").Inc()
			rec.idem = "replayed"
			g.answerRecorded(w, q, out.Result, rec)
			return nil, true
		}
	}
	return nil, false
}

// answerRecorded answers a duplicate with the recorded response, under the
// duplicate's own id.
func (g *Gateway) answerRecorded(w http.ResponseWriter, q *request, result []byte, rec *record) {
	msg, err := mcpmsg.WithID(result, q.msg.ID)
	if err != nil {
		rec.reject(w, errUnreachable, q.id())
		return
	}
	rec.status, rec.replica = http.StatusOK, "recorded"
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(msg)
}

// settle ends a claim after the request: the final response is recorded for
// duplicates; without one (never delivered, cancelled, cut) the claim is
// released and a re-issue runs again.
func (g *Gateway) settle(c *claim) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(g.base), g.opts.DialTimeout)
	defer cancel()
	if c.result != nil {
		err := g.idem.Complete(ctx, c.key, c.token, c.result, c.ttl)
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
	}
}

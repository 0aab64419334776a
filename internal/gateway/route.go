package gateway

import (
	"context"
	"net/http"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/balance"
	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// target is where a request may go: its session's replica, or any eligible
// replica of a snapshot.
type target struct {
	pinned *upstream.Replica
	snap   *upstream.Snapshot
}

// route finds the target of a classified request. A legacy request with a
// session goes to the replica that minted it; a session the gateway does not
// know, or whose replica has left the fleet, gets 404 with -32001 so the
// client re-initializes (2025-11-25 transports, "Session Management").
func (g *Gateway) route(q *request) (target, *mcpmsg.Error) {
	snap := g.fleet.Snapshot()
	if q.sessionID == "" {
		return target{snap: snap}, nil
	}
	name, ok := g.sessions.Get(q.sessionID, time.Now())
	if !ok {
		g.metrics.sessionMisses.WithLabelValues("unknown").Inc()
		return target{}, errSessionNotFound
	}
	rep := snap.Lookup(name)
	if rep == nil {
		g.sessions.Delete(q.sessionID)
		g.metrics.sessionMisses.WithLabelValues("replica_gone").Inc()
		return target{}, errSessionNotFound
	}
	return target{pinned: rep}, nil
}

// sent is the outcome of forwarding: an answer from an acquired replica, or
// the gateway's error.
type sent struct {
	resp *http.Response
	rep  *upstream.Replica
	err  *mcpmsg.Error
}

// forwardAsync runs send in its own goroutine, so the caller can keep the
// client's stream alive while the replica has not answered yet. The channel
// always yields exactly one result; the caller must take it.
func (g *Gateway) forwardAsync(ctx context.Context, r *http.Request, q *request, t target, rec *record) <-chan sent {
	ch := make(chan sent, 1)
	go func() {
		resp, rep, err := g.send(ctx, r, q, t, rec)
		ch <- sent{resp: resp, rep: rep, err: err}
	}()
	return ch
}

// send forwards the request to its target. It moves on to another replica
// only while the request provably never reached one (balance.MayRetry). On
// success the replica is returned acquired: the caller releases it.
func (g *Gateway) send(ctx context.Context, r *http.Request, q *request, t target, rec *record) (*http.Response, *upstream.Replica, *mcpmsg.Error) {
	var tried []int
	for retries := 0; ; retries++ {
		rep, idx := t.pinned, -1
		if rep == nil {
			idx = balance.Pick(g.opts.Balance, t.snap, g.seq.Add(1)-1, g.random(), tried)
			if idx < 0 {
				if retries == 0 {
					return nil, nil, errNoReplica
				}
				return nil, nil, errUnreachable
			}
			rep = t.snap.At(idx)
		}
		rec.replica, rec.attempts = rep.Name(), rec.attempts+1
		rep.Acquire()
		resp, delivered, err := g.fwd.forward(ctx, rep, r, q.body)
		if err == nil {
			return resp, rep, nil
		}
		rep.Release()
		g.log.Warn("forwarding failed", "replica", rep.Name(), "delivered", delivered, "error", err)
		switch {
		case ctx.Err() != nil:
			rec.clientGone = true
			return nil, nil, errUnreachable
		case delivered:
			return nil, nil, errAfterDelivery
		case t.pinned != nil:
			// Sessions live in their replica; one that cannot be reached
			// has lost them, so the client starts a new one elsewhere.
			g.sessions.Delete(q.sessionID)
			g.metrics.sessionMisses.WithLabelValues("replica_unreachable").Inc()
			return nil, nil, errSessionNotFound
		case !balance.MayRetry(balance.Attempt{Retries: retries, MaxRetries: g.opts.Retries}):
			return nil, nil, errUnreachable
		}
		g.metrics.retries.Inc()
		tried = append(tried, idx)
	}
}

// learn remembers the session a replica minted at initialize, and forgets a
// session that was ended (DELETE) or that its replica no longer knows (404).
func (g *Gateway) learn(r *http.Request, q *request, rep *upstream.Replica, resp *http.Response) {
	switch {
	case q.sessionID == "" && q.msg.HasInitialize:
		if id := resp.Header.Get(mcpmsg.HeaderSessionID); id != "" && resp.StatusCode < 300 {
			g.sessions.Put(id, rep.Name(), time.Now())
		}
	case q.sessionID != "" && (resp.StatusCode == http.StatusNotFound ||
		(r.Method == http.MethodDelete && resp.StatusCode < 300)):
		g.sessions.Delete(q.sessionID)
	}
}

package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"io"
	"net/http"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/balance"
	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
	"github.com/mcpfleet/mcpfleet/internal/session"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// target is where a request may go: its session's replica, or any eligible
// replica of a snapshot.
type target struct {
	pinned *upstream.Replica
	task   bool // pinned by the task registry, not by a session
	snap   *upstream.Snapshot
}

// route finds the target of a classified request. A legacy request with a
// session goes to the replica its sealed ID names; an ID that does not open
// (malformed, tampered with, sealed with a retired key) or names a replica
// that has left the fleet gets 404 with -32001, so the client re-initializes
// (2025-11-25 transports, "Session Management"), and so does one opened by
// another caller or older than the maximum age (binding.go). A tasks/*
// request goes to the replica that runs its task, when the gateway knows
// it; another caller's task is unknown to the caller.
func (g *Gateway) route(ctx context.Context, q *request) (target, *mcpmsg.Error) {
	snap := g.fleet.Snapshot()
	if q.sessionID == "" {
		rep, terr := g.taskReplica(ctx, q, snap)
		if terr != nil {
			return target{}, terr
		}
		if rep != nil {
			return target{pinned: rep, task: true}, nil
		}
		return target{snap: snap}, nil
	}
	c, err := g.keys.Open(q.sessionID)
	if err != nil {
		g.metrics.sessionMisses.WithLabelValues(openReason(err)).Inc()
		return target{}, errSessionNotFound
	}
	if !g.checkSession(c, q) {
		return target{}, errSessionNotFound
	}
	if g.opts.SharedSessions {
		// Every replica knows the session: it goes where new work would.
		q.upstreamSession = c.SessionID
		return target{snap: snap}, nil
	}
	rep := snap.Lookup(c.Replica)
	if rep == nil {
		g.metrics.sessionMisses.WithLabelValues("replica_gone").Inc()
		return target{}, errSessionNotFound
	}
	if rep.Quarantined() {
		// Its tools break the lock: the session ends, and its client
		// re-initializes on a replica that serves the accepted tools.
		g.metrics.sessionMisses.WithLabelValues("replica_quarantined").Inc()
		return target{}, errSessionNotFound
	}
	q.upstreamSession = c.SessionID
	rep.SawSession(time.Now(), c.SessionID)
	return target{pinned: rep}, nil
}

// openReason names why a session ID did not open, for the metric.
func openReason(err error) string {
	switch {
	case errors.Is(err, session.ErrUnknownKey):
		return "unknown_key"
	case errors.Is(err, session.ErrTampered):
		return "tampered"
	}
	return "malformed"
}

// sent is the outcome of forwarding: an answer from an acquired replica
// and the place it holds there (max_inflight), or the gateway's error, with
// when to come back if it is a capacity refusal.
type sent struct {
	resp  *http.Response
	rep   *upstream.Replica
	place *place
	err   *mcpmsg.Error
	retry time.Duration
}

// send forwards the request to its target. It moves on to another replica
// only as balance.MayRetry allows: when the request provably never ran
// there, or when running it twice is safe. On success the replica is
// returned acquired, with its place: the caller releases both.
func (g *Gateway) send(ctx context.Context, r *http.Request, q *request, t target, rec *record) sent {
	var tried []int
	var in balance.Input
	var ok func(int) bool // the replicas the call's tool allows
	allOut := t.pinned == nil && !anyEligible(t.snap)
	if t.pinned == nil {
		in = g.pickInput(r, q, t.snap)
		ok = g.toolFilter(q, t.snap, in)
		rec.route = g.opts.Balance.String()
		if ok != nil {
			rec.route += " tool-aware" // only replicas that declare the tool
		}
	} else {
		rec.route = "pinned"
	}
	for retries := 0; ; retries++ {
		rep, idx := t.pinned, -1
		var p *place
		if rep == nil {
			var retry time.Duration
			var perr *mcpmsg.Error
			if idx, p, retry, perr = g.pickPlace(ctx, r, q, t.snap, ok, in, tried, rec); perr != nil {
				return sent{err: perr, retry: retry}
			}
			if idx < 0 {
				return sent{err: g.newWorkError(balance.Exhausted(retries), allOut)}
			}
			rep = t.snap.At(idx)
		} else if g.capped(r, q) {
			var retry time.Duration
			var perr *mcpmsg.Error
			if p, retry, perr = g.placeAt(ctx, rep, rec); perr != nil {
				return sent{err: perr, retry: retry}
			}
		}
		rec.replica, rec.attempts = rep.Name(), rec.attempts+1
		actx, span := g.startAttempt(ctx, q, rep, rec.attempts)
		began := time.Now()
		resp, outcome, err := g.attemptResume(actx, r, q, rep)
		if err == nil {
			rec.rep, rec.attempt, rec.attemptStart = rep, span, began
			g.observeAttempt(q, rep, "", began)
			return sent{resp: resp, rep: rep, place: p}
		}
		g.observeAttempt(q, rep, outcomeName(outcome), began)
		g.endAttempt(span, outcomeName(outcome))
		p.Done()
		g.log.Warn("forwarding failed", "replica", rep.Name(), "outcome", outcomeName(outcome), "error", err)
		if ctx.Err() != nil {
			rec.clientGone = true
			return sent{err: errUnreachable}
		}
		if t.pinned != nil {
			return sent{err: g.pinnedFailure(t, outcome)}
		}
		a := balance.Attempt{Outcome: outcome, Safe: g.annotations.safeToRepeat(q), Retries: retries, MaxRetries: g.opts.Retries}
		if v := balance.Step(a); v != balance.MoveOn {
			return sent{err: g.newWorkError(v, allOut)}
		}
		g.metrics.retries.WithLabelValues(outcomeName(outcome)).Inc()
		if rec.span != nil {
			rec.span.AddEvent("mcpfleet.retry", trace.WithAttributes(attribute.String("mcpfleet.replica", rep.Name()), attribute.String("mcpfleet.outcome", outcomeName(outcome))))
		}
		rep.Retried()
		tried = append(tried, idx)
		in.Seq++
	}
}

// resumeConflictWait bounds how long a resume at the replica is asked again
// while the replica refuses it with 409 because the stream it names is
// still open there (the Go SDK: "stream ID conflicts with ongoing stream").
// The gateway that relayed the stream closed it when its client went, and
// the replica sees that a moment later; a client that resumes at once
// would otherwise be refused.
const resumeConflictWait = time.Second

// attemptResume is attempt, except that a resume (a GET with Last-Event-ID,
// which has no effect to repeat) answered 409 is sent again after 20 ms,
// 40 ms, ... for up to resumeConflictWait; then the 409 is the answer.
func (g *Gateway) attemptResume(ctx context.Context, r *http.Request, q *request, rep *upstream.Replica) (*http.Response, balance.Outcome, error) {
	resumes := r.Method == http.MethodGet && r.Header.Get(lastEventID) != ""
	deadline := time.Now().Add(resumeConflictWait)
	for delay := 20 * time.Millisecond; ; delay *= 2 {
		resp, outcome, err := g.attempt(ctx, r, q, rep)
		if !resumes || err != nil || resp.StatusCode != http.StatusConflict || time.Now().Add(delay).After(deadline) {
			return resp, outcome, err
		}
		resp.Body.Close()
		rep.Release()
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, balance.Delivered, ctx.Err()
		case <-t.C:
		}
	}
}

// pick chooses a replica for new work. When health checks have taken every
// replica out, it picks among all of them rather than refuse the request,
// as nginx does: a dead replica then fails the dial, and the request moves
// on or fails as it would have anyway.
//
// ok, when not nil, is the call's tool filter (toolFilter): only replicas
// it allows are picked while any eligible one is.
func (g *Gateway) pick(snap *upstream.Snapshot, ok func(int) bool, in balance.Input, tried []int) int {
	var v balance.View = snap
	if ok != nil {
		v = filtered{snap, ok}
	}
	if idx := balance.Pick(g.opts.Balance, v, in, tried); idx >= 0 || len(tried) > 0 {
		return idx
	}
	g.metrics.noneEligible.Inc()
	return balance.Pick(g.opts.Balance, allEligible{snap}, in, tried)
}

// allEligible is a snapshot whose every replica counts as eligible.
type allEligible struct{ *upstream.Snapshot }

func (allEligible) Eligible(int) bool { return true }

// errDrainingAnswer marks a replica's 503 {"status":"draining"} answer.
var errDrainingAnswer = errors.New("replica is draining")

// attempt forwards once. It acquires rep for the request, and releases it
// again unless it returns an answer.
func (g *Gateway) attempt(ctx context.Context, r *http.Request, q *request, rep *upstream.Replica) (*http.Response, balance.Outcome, error) {
	rep.Acquire()
	in, body := r, q.body
	if g.tr != nil && trace.SpanContextFromContext(ctx).IsValid() {
		in, body = outbound(ctx, r, q)
	}
	resp, delivered, err := g.fwd.forwardAt(ctx, q.endpoint(rep), rep.Leaving(), in, body, q.upstreamSession, q.target)
	if err != nil {
		rep.Release()
		if !delivered {
			if ctx.Err() == nil {
				rep.ReportConnectFailure() // passive health: counts as a failed check
			}
			return nil, balance.NotDelivered, err
		}
		return nil, balance.Delivered, err
	}
	if resp.StatusCode == http.StatusServiceUnavailable && isDrainingAnswer(resp) {
		resp.Body.Close()
		rep.Release()
		rep.ReportDraining()
		return nil, balance.RefusedDraining, errDrainingAnswer
	}
	rep.ReportSuccess()
	return resp, balance.Delivered, nil
}

// pinnedFailure answers a request whose session (or task) lives on a
// replica that failed it: sessions live in their replica, and one that
// cannot be reached or refuses work has lost them, so the client starts a
// new one elsewhere (404, -32001). A delivered request is never resent.
func (g *Gateway) pinnedFailure(t target, outcome balance.Outcome) *mcpmsg.Error {
	v := balance.PinnedVerdict(outcome, t.task)
	if v == balance.SessionLost {
		reason := "replica_unreachable"
		if outcome == balance.RefusedDraining {
			reason = "replica_draining"
		}
		g.metrics.sessionMisses.WithLabelValues(reason).Inc()
	}
	return g.verdictError(v)
}

// newWorkError is the gateway's answer for a send-loop verdict of new work.
// allOut says no replica was eligible when the loop began: pick then sent
// the request to one anyway, and if that did not take it, nothing could
// (503, come back later: balance.NoneEligible).
func (g *Gateway) newWorkError(v balance.Verdict, allOut bool) *mcpmsg.Error {
	if allOut {
		v = balance.NoneEligible(v)
	}
	return g.verdictError(v)
}

// verdictError is the gateway's answer for a send-loop verdict.
func (g *Gateway) verdictError(v balance.Verdict) *mcpmsg.Error {
	switch v {
	case balance.FailAfterDelivery:
		return errAfterDelivery
	case balance.FailNoReplica:
		return g.noReplica
	case balance.SessionLost:
		return errSessionNotFound
	}
	return errUnreachable
}

// isDrainingAnswer reports a 503 whose JSON body says "status":"draining"
// (the GitLab MCP server's load-balancing guide): the replica is shutting down and ran nothing. It peeks at most
// 4 KiB and leaves the body readable either way.
func isDrainingAnswer(resp *http.Response) bool {
	peek, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(peek), resp.Body), resp.Body}
	var v struct {
		Status string `json:"status"`
	}
	return json.Unmarshal(peek, &v) == nil && v.Status == "draining"
}

func outcomeName(o balance.Outcome) string {
	switch o {
	case balance.NotDelivered:
		return "not_delivered"
	case balance.RefusedDraining:
		return "draining"
	}
	return "delivered_safe"
}

// learn makes the replica's Mcp-Session-Id the client's sealed one: on the
// answer to initialize it seals the new session; on any other answer that
// carries the header it puts back the ID the client sent. The replica's own
// ID never reaches the client.
func (g *Gateway) learn(q *request, rep *upstream.Replica, resp *http.Response) {
	id := resp.Header.Get(mcpmsg.HeaderSessionID)
	switch {
	case id == "":
	case q.sessionID == "" && q.msg.HasInitialize:
		sealed, err := g.keys.Seal(session.Claims{Replica: rep.Name(), SessionID: id, Issued: time.Now(), Opener: q.caller}, rand.Reader)
		if err != nil {
			g.log.Error("sealing a session id failed", "replica", rep.Name(), "error", err)
			resp.Header.Del(mcpmsg.HeaderSessionID)
			return
		}
		resp.Header.Set(mcpmsg.HeaderSessionID, sealed)
		rep.SawSession(time.Now(), id)
	case q.sessionID != "":
		resp.Header.Set(mcpmsg.HeaderSessionID, q.sessionID)
	default:
		resp.Header.Del(mcpmsg.HeaderSessionID)
	}
}

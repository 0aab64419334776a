package sim

import (
	"time"

	"github.com/mcpfleet/mcpfleet/internal/limit"
)

// unroutableDelay is how long a client waits before sending again a call
// that the balancer had no replica for (503).
const unroutableDelay = time.Second

// send is a client sending call c (first time or again) through one of
// the gateways. In Local2025 the client initializes first if it holds no
// session. The gateway admits the call (limits) before it routes it, as
// the gateway's own steps go; a request that reaches a replica without its
// session gets 404. A call that goes nowhere gives its lease back at once.
func (e *engine) send(c int32) {
	cl := e.traffic[c].Client
	g := e.pickGateway()
	if e.s.Protocol == Local2025 && !e.clients[cl].hasSession && !e.initialize(cl, g) {
		e.unroutable(c)
		return
	}
	id, ok := e.admit(c, g)
	if !ok {
		return // 429: re-sent after the retry hint
	}
	e.forward(c, g, id)
}

// forward is gateway g's route and send of admitted call c, which holds
// admission lease id: to a replica with a place, or to the queue when every
// replica it may go to is at its max_inflight.
func (e *engine) forward(c int32, g int, id limit.LeaseID) {
	cl := e.traffic[c].Client
	r, place, pinnedLost, full := e.route(cl, g, c, false)
	if full {
		e.waitPlace(c, g, id)
		return
	}
	e.calls[c].waiting = false
	switch {
	case pinnedLost:
		e.releaseLease(c, g, id)
		e.notFound(c)
	case r < 0:
		e.releaseLease(c, g, id)
		e.unroutable(c)
	case e.s.Protocol == Local2025 && !e.sessionOn(cl, r):
		e.releasePlace(g, r, place)
		e.releaseLease(c, g, id)
		e.notFound(c)
	case e.calls[c].newTool && !e.reps[r].newTool:
		e.releasePlace(g, r, place)
		e.releaseLease(c, g, id)
		e.unknownTool(c)
	default:
		e.accept(c, r, g, id, place)
	}
}

// initialize gives client cl a new session on the replica gateway g picks
// for a request without one; false when there is none. Every initialize
// after a client's first is a re-initialization. Limits govern tools/call
// only: an initialize is never refused.
func (e *engine) initialize(cl, g int) bool {
	r := e.pick(cl, g, true)
	if r < 0 {
		return false
	}
	c := &e.clients[cl]
	if c.session > 0 {
		e.res.Reinitializations++
	}
	c.hasSession, c.replica, c.gen = true, int32(r), e.reps[r].gen
	c.session++
	return true
}

// sessionOn reports whether client cl's session lives in replica r.
func (e *engine) sessionOn(cl, r int) bool {
	c := &e.clients[cl]
	return c.hasSession && int(c.replica) == r && c.gen == e.reps[r].gen
}

// notFound is a 404 for call c's request: the client drops its session,
// re-initializes (one round trip, done when it sends again) and re-issues
// the call (2025-11-25 transports, "Session Management").
func (e *engine) notFound(c int32) {
	e.res.NotFound++
	e.tl.add(e.now, &e.tl.notFound)
	e.calls[c].saw404 = true
	e.clients[e.traffic[c].Client].hasSession = false
	e.reissue(c, seconds(e.s.RoundTrip))
}

// unroutable is a request the balancer could place nowhere (503).
func (e *engine) unroutable(c int32) {
	e.res.Unroutable++
	e.reissue(c, unroutableDelay)
}

// reissue sends call c again after delay, unless the client has already
// sent it MaxReissues times more than once; then it gives up.
func (e *engine) reissue(c int32, delay time.Duration) {
	cs := &e.calls[c]
	cs.exec = -1
	if int(cs.reissues) >= e.s.MaxReissues {
		e.fail(c)
		return
	}
	cs.reissues++
	e.res.Reissues++
	e.heap.push(e.now+delay, evSend, c, 0)
}

// answer is the final answer of call c reaching its client.
func (e *engine) answer(c int32) {
	cs := &e.calls[c]
	cs.resolved, cs.exec = true, -1
	e.res.Completed++
	e.lat = append(e.lat, e.now-e.traffic[c].At)
	e.open--
}

// fail is the client giving call c up.
func (e *engine) fail(c int32) {
	cs := &e.calls[c]
	cs.resolved, cs.exec = true, -1
	e.res.Failed++
	e.tl.add(e.now, &e.tl.failures)
	e.open--
}

// dropped is the client's stream of execution x ending without an answer:
// cut by the idle timeout or by the kill of its replica. In 2026-07-28 the
// dropped stream is the cancel of the request (a mutation already done
// stays done) and the client re-issues the call. In 2025-11-25 it is not a
// cancel: the call runs on and the client reconnects with Last-Event-ID.
func (e *engine) dropped(x int32) {
	ex := &e.execs[x]
	if e.s.Protocol != Rev2026 {
		e.heap.push(e.now+seconds(e.s.RoundTrip), evReconnect, x, 0)
		return
	}
	if ex.state == queued || ex.state == running {
		e.release(x, cancelled)
		e.res.Cancelled++
	}
	e.reissue(ex.call, seconds(e.s.RoundTrip))
}

// reconnect is the client of execution x resuming its stream (GET with
// Last-Event-ID) through the balancer. It resumes if the replica reached
// can see the stream's buffer: with a shared store any replica can; with
// local sessions only the execution's own replica, still in the same
// generation, under the client's current session. Otherwise the client
// re-issues the call; a 404 first makes it re-initialize.
func (e *engine) reconnect(x int32) {
	ex := &e.execs[x]
	c := ex.call
	if cs := &e.calls[c]; cs.resolved || cs.exec != x {
		return
	}
	cl := e.traffic[c].Client
	r, _, pinnedLost, _ := e.route(cl, e.pickGateway(), -1, true)
	switch {
	case pinnedLost:
		e.notFound(c)
		return
	case r < 0:
		e.heap.push(e.now+unroutableDelay, evReconnect, x, 0)
		return
	case e.s.Protocol == Local2025 && !e.sessionOn(cl, r):
		e.notFound(c)
		return
	}
	visible := e.s.Protocol == Shared2025 ||
		(int(ex.replica) == r && ex.session == e.clients[cl].session && ex.gen == e.reps[r].gen)
	if !visible || ex.state == killed {
		e.reissue(c, seconds(e.s.RoundTrip)) // the buffer is out of reach, or the call is gone
		return
	}
	e.res.Resumes++
	if ex.state == done {
		e.answer(c) // the answer waited in the buffer
		return
	}
	ex.attached, ex.lastByte = true, e.now
	e.armIdle(x)
}

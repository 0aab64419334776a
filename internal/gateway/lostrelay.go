package gateway

import (
	"errors"
	"io"
	"net/http"
	"sync"

	"github.com/mcpfleet/mcpfleet/internal/session"
	"github.com/mcpfleet/mcpfleet/internal/sse"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
	"github.com/prometheus/client_golang/prometheus"
)

// The gateway's side of a replica lost mid-call (lost.go): where the relay
// finds the calls whose replica went away, and writes their answers.

// newLostMetric is mcpfleet_replica_lost_calls_total, registered with reg.
// Its replica label takes the fleet's replica names, which the
// configuration bounds (a static list, a file, or DNS of one service).
func newLostMetric(reg prometheus.Registerer) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpfleet_replica_lost_calls_total",
		Help: "Calls whose replica went away before their final response, answered by the gateway with a replica_lost error (-32603), by replica.",
	}, []string{"replica"})
	reg.MustRegister(c)
	return c
}

// lostAt reports whether a relayed stream that ended with err leaves calls
// to answer as lost: calls still wait, and the replica ended the stream,
// not the gateway (a 2026-07-28 client that went, a standalone stream's
// client, shutdown: each ends the upstream context; replicaEnded). A
// 2025-11-25 stream that a replica with its own event IDs ended in good
// order is not lost: that is SEP-1699's server-side disconnect, and the
// replica serves the resume itself.
func (p *pumping) lostAt(err error) bool {
	rec := p.rec
	switch {
	case !rec.calls.waiting():
		return false
	case !rec.replicaEnded():
		return false
	case rec.clientGone && rec.tap == nil:
		return false // nobody to tell, nothing kept
	case errors.Is(err, io.EOF) && rec.tap.replicaKeeps():
		return false
	}
	return true
}

// replicaEnded reports whether an answer that ended was ended by its
// replica: the upstream context is still live. Without one (the legs of
// a fan-out) the gateway cannot tell, and answers nothing.
func (rec *record) replicaEnded() bool {
	return rec.upstream != nil && rec.upstream.Err() == nil
}

// answerLost answers every call that still waits on a relayed stream as
// lost: an event each, sealed and kept where the stream is kept, written
// to the client if it is still there. The caller ends the stream.
func (g *Gateway) answerLost(sw *sse.Writer, rec *record) {
	ids := rec.calls.take()
	if len(ids) == 0 {
		return
	}
	g.countLost(rec.replica, len(ids))
	tap := rec.tap
	tap.keepToEnd()
	for _, block := range lostEvents(replicaLost(rec.replica, true), ids) {
		var at *session.EventID
		if tap != nil {
			block, at = tap.seal(block)
			rec.clientGone = rec.clientGone || tap.isGone()
		}
		rec.events++
		if rec.clientGone {
			continue
		}
		if err := tap.writeTo(sw, block, at); err != nil {
			rec.clientGone = true
			tap.clientGone()
		}
	}
}

// lostBeforeAnswer answers a request whose replica took it and went away
// before any of its answer reached the client (send's errAfterDelivery, or
// a JSON answer whose first byte never came): in the stream the gateway
// opened early, or as the JSON answer, 502.
func (g *Gateway) lostBeforeAnswer(w http.ResponseWriter, early *sse.Writer, q *request, rec *record) {
	e := replicaLost(rec.replica, true)
	rec.rejected, rec.rejectCode = true, int64(e.Code)
	if early != nil {
		defer g.closeEarly(early, rec)
		rec.calls = callsOf(q)
		g.answerLost(early, rec)
		rec.tap.done()
		return
	}
	ids := requestIDs(q)
	g.countLost(rec.replica, len(ids))
	rec.status = e.Status
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(e.Status)
	w.Write(lostBody(e, ids, q.msg.Batch))
}

// countLost counts n calls lost with their replica, and logs them.
func (g *Gateway) countLost(replica string, n int) {
	if n == 0 {
		return
	}
	g.metrics.replicaLost.WithLabelValues(replica).Add(float64(n))
	g.log.Warn("replica lost mid-call: answered the calls it held", "replica", replica, "calls", n)
}

// readFirst reads the first bytes of a JSON answer into buf, before its
// header goes to the client, so that an answer whose replica goes before
// them can still get an answer of its own (lostBeforeAnswer).
func readFirst(body io.Reader, buf []byte) ([]byte, error) {
	for range 8 { // a Reader may return 0, nil; a few times is patience enough
		n, err := body.Read(buf)
		if n > 0 || err != nil {
			return buf[:n], err
		}
	}
	return nil, nil
}

// sseCalls follows the calls of the 2024-11-05 sessions whose streams this
// process relays. The answers to a session's messages come on its stream,
// not on their POSTs, so a POST through this process adds its requests to
// the stream's calls (serveSSEMessage), and the stream's relay answers
// those still waiting when its replica goes. A message POSTed through
// another gateway process is not followed: its stream's process never
// sees it.
type sseCalls struct {
	mu sync.Mutex        // guards m
	m  map[string]*calls // by sseCallKey
}

// sseCallKey names a session: its replica and the replica's own endpoint.
func sseCallKey(replica, target string) string { return replica + " " + target }

// follow registers a stream's calls under key.
func (s *sseCalls) follow(key string, c *calls) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]*calls{}
	}
	s.m[key] = c
}

// forget ends what follow began, once the stream has ended.
func (s *sseCalls) forget(key string, c *calls) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[key] == c {
		delete(s.m, key)
	}
}

// of returns the calls of the session key names; nil when this process
// does not relay its stream.
func (s *sseCalls) of(key string) *calls {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[key]
}

// followSSECalls adds a 2024-11-05 message's requests to its session's
// calls, when this process relays the session's stream; it returns those
// it follows.
func (g *Gateway) followSSECalls(rep *upstream.Replica, q *request) [][]byte {
	c := g.sseCalls.of(sseCallKey(rep.Name(), q.target))
	if c == nil {
		return nil
	}
	var ids [][]byte
	for _, id := range requestIDs(q) {
		if c.add(id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// dropSSECalls stops following requests of a message that the replica did
// not take: their answer is the POST's.
func (g *Gateway) dropSSECalls(rep *upstream.Replica, q *request, ids [][]byte) {
	if len(ids) == 0 {
		return
	}
	if c := g.sseCalls.of(sseCallKey(rep.Name(), q.target)); c != nil {
		for _, id := range ids {
			c.drop(id)
		}
	}
}

package gateway

import (
	"context"
	"hash/maphash"
	"net/http"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
	"github.com/mcpfleet/mcpfleet/internal/sse"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// A 2026-07-28 subscriptions/listen stream (SEP-2575) receives the
// notifications of the replica that serves it. In a fleet the event behind a
// notification happens on any replica: the tool list of the replica a call
// reached changes, a resource changes under another. One listen stream
// pinned to one replica misses them. So the gateway opens the listen request
// on every eligible replica and merges their streams into the client's:
// one acknowledgement, every notification (identical ones arriving within
// dedupWindow of each other once), and the first final response. The client
// closing its stream cancels every upstream one.

// dedupWindow is how close two identical notifications from different
// replicas must be to count as one event.
const dedupWindow = time.Second

const methodSubscriptionsAck = "notifications/subscriptions/acknowledged"

// fansOut reports whether a request is served by every replica at once.
func fansOut(q *request, snap *upstream.Snapshot) bool {
	return q.era == mcpmsg.EraStateless && q.msg.Method == "subscriptions/listen" &&
		q.msg.Kind == mcpmsg.KindRequest && !q.msg.Batch && snap.Len() > 1
}

// leg is one replica's part of a fanned-out request: its answer, or nil
// when it could not be reached.
type leg struct {
	rep  *upstream.Replica
	resp *http.Response
}

// opened reports whether the leg answered with an SSE stream.
func (l leg) opened() bool {
	return l.resp != nil && l.resp.StatusCode < 300 && isEventStream(l.resp.Header.Get("Content-Type"))
}

// discard closes a leg that will not be relayed.
func (l leg) discard() {
	if l.resp != nil {
		l.resp.Body.Close()
		l.rep.Release()
	}
}

// openLegs forwards the request to every eligible replica at once. Each
// leg arrives on the channel when its replica answers (or fails); the int is
// how many will arrive.
func (g *Gateway) openLegs(ctx context.Context, r *http.Request, q *request, snap *upstream.Snapshot) (<-chan leg, int) {
	legs := make(chan leg, snap.Len())
	n := 0
	for i := range snap.Len() {
		if !snap.Eligible(i) {
			continue
		}
		n++
		rep := snap.At(i)
		go func() {
			rep.Acquire()
			resp, _, err := g.fwd.forward(ctx, rep, r, q.body, "", "")
			if err != nil {
				rep.Release()
				resp = nil
			}
			legs <- leg{rep: rep, resp: resp}
		}()
	}
	return legs, n
}

// serveFanout forwards the request to every eligible replica and merges the
// SSE streams they open. The client's stream opens with the first of them;
// later ones join. If none opens, the client gets the first replica's own
// answer, as a single request would.
func (g *Gateway) serveFanout(w http.ResponseWriter, r *http.Request, q *request, snap *upstream.Snapshot, rec *record) {
	ctx, cancel := context.WithCancel(r.Context())
	legs, pending := g.openLegs(ctx, r, q, snap)
	rec.replica, rec.attempts = "fanout", pending
	m := &merger{g: g, ctx: ctx, legs: legs, pending: pending, events: make(chan []byte), done: make(chan struct{})}
	defer m.close(cancel)
	var fallback leg
	for m.pending > 0 && m.live == 0 {
		l := <-legs
		m.pending--
		switch {
		case l.opened():
			m.add(l)
		case fallback.resp == nil:
			fallback = l
		default:
			l.discard()
		}
	}
	if m.live == 0 {
		switch {
		case pending == 0 && fallback.resp == nil:
			rec.reject(w, g.noReplica, q.id()) // no replica was eligible
			return
		case fallback.resp == nil:
			rec.reject(w, errUnreachable, q.id())
			return
		}
		defer fallback.discard()
		g.relay(w, r, q, fallback.resp, rec)
		return
	}
	fallback.discard()
	g.relayMerged(w, m, rec)
}

// relayMerged opens the client's SSE stream and relays the merged events.
func (g *Gateway) relayMerged(w http.ResponseWriter, m *merger, rec *record) {
	cw := g.openEventStream(w, rec)
	g.metrics.streams.Inc()
	defer g.metrics.streams.Dec()
	_ = cw.Flush()
	sw := sse.NewWriter(cw, cw, max(g.opts.KeepAlive, 0))
	defer func() {
		sw.Close()
		rec.keepAlives = sw.KeepAlives()
		g.metrics.keepAlives.Add(float64(rec.keepAlives))
	}()
	m.relay(sw, rec)
}

// merger joins the SSE streams of a fanned-out request. Only the request's
// goroutine touches its counters; leg readers talk through channels.
type merger struct {
	g       *Gateway
	ctx     context.Context
	legs    <-chan leg    // legs still to answer
	pending int           // how many legs have not answered yet
	live    int           // legs being read
	events  chan []byte   // event blocks from every leg
	done    chan struct{} // a leg's stream ended
	wg      sync.WaitGroup
}

// add starts reading one leg's stream into the shared channel.
func (m *merger) add(l leg) {
	m.live++
	m.wg.Go(func() {
		defer l.discard()
		rd := sse.NewReader(l.resp.Body, m.g.opts.MaxEventBytes)
		for {
			block, err := rd.Next()
			if err != nil {
				select {
				case m.done <- struct{}{}:
				case <-m.ctx.Done():
				}
				return
			}
			select {
			case m.events <- append([]byte(nil), block...):
			case <-m.ctx.Done():
				return
			}
		}
	})
}

// close cancels every leg, waits for their readers and releases the legs
// that answer late.
func (m *merger) close(cancel context.CancelFunc) {
	cancel()
	m.wg.Wait()
	for ; m.pending > 0; m.pending-- {
		(<-m.legs).discard()
	}
}

// relay writes merged events to the client until the first final response,
// until every leg has ended, or until the client goes.
func (m *merger) relay(sw *sse.Writer, rec *record) {
	var acked bool
	seed := maphash.MakeSeed()
	seen := map[uint64]time.Time{}
	for m.live > 0 || m.pending > 0 {
		var block []byte
		legs := m.legs
		if m.pending == 0 {
			legs = nil
		}
		select {
		case l := <-legs:
			m.pending--
			if l.opened() {
				m.add(l)
			} else {
				l.discard()
			}
			continue
		case <-m.done:
			m.live--
			continue
		case <-m.ctx.Done():
			rec.clientGone = true
			return
		case block = <-m.events:
		}
		ev := sse.Parse(block)
		msg, err := mcpmsg.Parse(ev.Data)
		switch {
		case ev.Comment || err != nil:
			continue // keep-alives, priming events: the gateway keeps its own stream alive
		case msg.Method == methodSubscriptionsAck:
			if acked {
				continue
			}
			acked = true
		case msg.Kind == mcpmsg.KindNotification:
			if isDuplicate(seen, maphash.Bytes(seed, ev.Data), time.Now()) {
				continue
			}
			m.g.invalidateFrom(ev.Data)
			m.g.tw.noticed(nil, ev.Data) // merged: which replica is not known
		}
		rec.events++
		if sw.WriteEvent(block) != nil {
			rec.clientGone = true
			return
		}
		if msg.Kind == mcpmsg.KindResponse {
			return // the listen is over; returning cancels the other legs
		}
	}
}

// isDuplicate reports whether a notification with this digest was relayed
// within dedupWindow before now, and records it. It also forgets old
// digests, so the map stays small.
func isDuplicate(seen map[uint64]time.Time, digest uint64, now time.Time) bool {
	for d, at := range seen {
		if now.Sub(at) > dedupWindow {
			delete(seen, d)
		}
	}
	if _, ok := seen[digest]; ok {
		return true
	}
	seen[digest] = now
	return false
}

package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"io"
	"mime"
	"net/http"
	"runtime/debug"
	"sync"

	"github.com/mcpfleet/mcpfleet/internal/h1"
	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
	"github.com/mcpfleet/mcpfleet/internal/session"
	"github.com/mcpfleet/mcpfleet/internal/sse"
)

// relay copies the replica's answer to the client: JSON as it comes, SSE
// event by event with each flushed at once and keep-alive comments in the
// silences.
func (g *Gateway) relay(w http.ResponseWriter, r *http.Request, q *request, resp *http.Response, rec *record) {
	stream := isEventStream(resp.Header.Get("Content-Type"))
	var bp *[]byte
	var first []byte
	var ferr error
	if !stream {
		bp = copyBufs.Get().(*[]byte)
		defer copyBufs.Put(bp)
		first, ferr = readFirst(resp.Body, *bp)
		if len(first) == 0 && ferr != nil && !errors.Is(ferr, io.EOF) && q.msg.Kind == mcpmsg.KindRequest && rec.replicaEnded() {
			rec.upstreamStatus, rec.upstreamCut = resp.StatusCode, true
			g.lostBeforeAnswer(w, nil, q, rec)
			return
		}
	}
	if !stream && filtersList(q) {
		// The whole list, read: what the replica said is noted (the
		// cache, the tool watcher), the caller's share is relayed. One
		// that cannot be read whole is not relayed unfiltered.
		all, err := g.readList(resp.Body, first, ferr)
		if !errors.Is(err, io.EOF) {
			rec.upstreamStatus, rec.upstreamCut = resp.StatusCode, true
			rec.reject(w, errAfterDelivery, q.id())
			return
		}
		g.noteAnswer(q, all, rec)
		g.relayList(w, q, resp, rec, g.filterList(q, all))
		return
	}
	h := relayHeader(w, resp.Header)
	removeHop(h)
	if stream {
		h.Del("Content-Length")
		// nginx and others buffer responses unless told not to.
		h.Set("X-Accel-Buffering", "no")
		if h.Get("Cache-Control") == "" {
			h.Set("Cache-Control", "no-cache")
		}
	}
	rec.status, rec.upstreamStatus = resp.StatusCode, resp.StatusCode
	if stream && rec.claim != nil {
		rec.claim.sse = true // a duplicate that accepts SSE gets its answer the same way
	}
	w.WriteHeader(resp.StatusCode)
	cw := &rec.writer
	*cw = clientWriter{w: w, rc: *http.NewResponseController(w), timeout: g.opts.WriteTimeout}
	if !stream {
		g.relayJSON(cw, q, resp, rec, first, ferr, *bp)
		return
	}
	g.relayStream(cw, r, q, resp, rec)
}

// headerAdopter is a ResponseWriter that can take a header map whole
// (internal/h1's server).
type headerAdopter interface{ AdoptHeader(http.Header) bool }

// relayHeader puts the replica's fields in w's header and returns that
// header. Where w can take the replica's map itself, it does, and from is
// w's header from then on: an allocation less than copying it.
func relayHeader(w http.ResponseWriter, from http.Header) http.Header {
	if a, ok := w.(headerAdopter); ok && a.AdoptHeader(from) {
		return from
	}
	h := w.Header()
	for k, vv := range from {
		h[k] = vv
	}
	return h
}

// relayJSON copies a JSON answer whose first bytes (first, and the error
// that came with them) relay has read, with buf for the rest.
func (g *Gateway) relayJSON(cw *clientWriter, q *request, resp *http.Response, rec *record, first []byte, ferr error, buf []byte) {
	var dst io.Writer = cw
	var seen *capture
	if g.watchesAnswer(q, rec) {
		seen = captures.Get().(*capture)
		seen.w, seen.b, seen.over = cw, seen.b[:0], false
		defer seen.release()
		dst = seen
	}
	// first is in buf: it is written before the copy reuses buf.
	var n0 int
	var err error
	if len(first) > 0 {
		n0, err = dst.Write(first)
	}
	var n int64
	switch {
	case err != nil:
	case ferr == nil:
		n, err = io.CopyBuffer(dst, resp.Body, buf)
	case !errors.Is(ferr, io.EOF):
		err = ferr
	}
	if seen != nil && !seen.over {
		g.noteAnswer(q, seen.b, rec)
	}
	rec.bytes = int64(n0) + n
	if err != nil {
		rec.clientGone = rec.clientGone || cw.failed
		rec.upstreamCut = !cw.failed
	}
}

func (g *Gateway) relayStream(cw *clientWriter, r *http.Request, q *request, resp *http.Response, rec *record) {
	g.metrics.streams.Inc()
	if rec.rep != nil {
		rec.rep.StreamOpened()
	}
	// First byte at once: the client sees the stream open as soon as the
	// replica opens it.
	if cw.Flush() != nil {
		rec.clientGone = true
	}
	every := g.opts.KeepAlive
	if every < 0 {
		every = 0
	}
	p := &pumping{g: g, cw: cw, r: r, q: q, rec: rec, sw: sse.NewWriter(cw, cw, every)}
	rec.tap.prime(p.sw)
	if r.Method == http.MethodGet {
		// A standalone stream is silent most of its life: between events
		// it holds no read buffer, the replica's connection's nor its own,
		// and, where the handler can let its stream go on without it
		// (rec.leave), no goroutine either.
		p.rd = sse.NewIdleReader(resp.Body, g.opts.MaxEventBytes)
		p.mayPark = rec.leave != nil
	} else {
		p.rd = sse.NewReader(resp.Body, g.opts.MaxEventBytes)
	}
	p.begin()
	if p.run() {
		return // parked: the stream goes on, and ends, without this goroutine
	}
	p.end()
}

// pumping copies events from the replica to the client until the replica's
// stream ends. A legacy POST stream runs to its end even when the client has
// gone: the call goes on (a dropped stream is not a cancel), and reading on
// keeps the replica from seeing a cut. Any other stream stops at once, and
// closing its upstream body ends it there too: for 2026-07-28 that is the
// cancel of the request.
//
// A standalone GET stream parks between events where it can (mayPark): the
// handler detaches its response (h1.Detach) and returns, the replica's
// connection waits in a poll set (sse.Reader.Park), and each time it has
// bytes a new goroutine relays them (resume). The last of them ends the
// stream as the handler would have: end, then the request's leave and
// finish, then the response's done.
type pumping struct {
	g        *Gateway
	cw       *clientWriter
	sw       *sse.Writer
	rd       *sse.Reader
	r        *http.Request
	q        *request
	rec      *record
	stopEnd  func() // endOnShutdown's
	mayPark  bool
	detached func() // the response's done, once detached
	ending   bool   // finishDetached has begun
	wake     func() // resume, in a new goroutine
}

func (p *pumping) begin() {
	if p.rec.calls == nil && p.r.Method == http.MethodPost {
		p.rec.calls = callsOf(p.q)
	}
	if tap := p.rec.tap; tap != nil {
		tap.watch(p.r.Context())
		p.stopEnd = p.g.endOnShutdown(p.sw, p.r, tap)
	}
}

// pump relays a stream that does not park, in the calling goroutine.
func (g *Gateway) pump(sw *sse.Writer, rd *sse.Reader, r *http.Request, q *request, rec *record) {
	p := &pumping{g: g, sw: sw, rd: rd, r: r, q: q, rec: rec}
	p.begin()
	p.run()
	p.unwatch()
}

// unwatch ends what begin started.
func (p *pumping) unwatch() {
	if p.stopEnd != nil {
		p.stopEnd()
	}
	p.rec.tap.done()
}

// end is what the stream's end owes, in the order of the defers it
// stands for.
func (p *pumping) end() {
	g, rec := p.g, p.rec
	p.unwatch()
	p.sw.Close()
	n := p.sw.KeepAlives()
	rec.keepAlives += n
	g.metrics.keepAlives.Add(float64(n))
	if rec.rep != nil {
		rec.rep.StreamClosed()
	}
	g.metrics.streams.Dec()
}

// run relays until the stream ends (false) or parks (true).
func (p *pumping) run() (parked bool) {
	g, r, q, rec, rd, sw := p.g, p.r, p.q, p.rec, p.rd, p.sw
	drain := q.era == mcpmsg.EraLegacy && r.Method == http.MethodPost
	tap := rec.tap
	for {
		if p.mayPark && p.park() {
			return true
		}
		block, err := rd.Next()
		if err != nil {
			lost := p.lostAt(err)
			// An unfinished event is no event (WHATWG HTML, "Event stream
			// interpretation"); before the gateway's answers it would
			// spoil the first of them.
			if rest := rd.Rest(); len(rest) > 0 && !rec.clientGone && !lost {
				_ = tap.writeTo(sw, rest, nil)
			}
			if !errors.Is(err, io.EOF) && !rec.clientGone && r.Context().Err() == nil {
				rec.upstreamCut = true
			}
			if lost {
				g.answerLost(sw, rec)
			}
			return false
		}
		rec.events++
		if rec.calls != nil {
			rec.calls.see(block)
		}
		if rec.span != nil && r.Method == http.MethodGet && rec.events <= maxSpanEvents {
			rec.span.AddEvent("mcp.stream.event", trace.WithAttributes(attribute.Int("mcpfleet.stream.event", rec.events)))
		}
		watch, inval := g.watchesAnswer(q, rec), g.opts.Cache != nil
		relist := g.tw != nil && bytes.Contains(block, listChanged)
		if watch || inval || relist {
			data := sse.Parse(block).Data
			if watch {
				g.noteAnswer(q, data, rec)
			}
			if inval {
				g.invalidateFrom(data)
			}
			if relist {
				g.tw.noticed(rec.rep, data)
			}
		}
		if filtersList(q) {
			block = g.filterEvent(q, block) // after the replica's whole list was noted
		}
		var at *session.EventID
		if tap != nil {
			block, at = tap.seal(block)
			rec.clientGone = rec.clientGone || tap.isGone()
		}
		if rec.clientGone {
			continue
		}
		rec.bytes += int64(len(block))
		if err := tap.writeTo(sw, block, at); errors.Is(err, errEnded) {
			rec.clientGone = true
		} else if err != nil {
			rec.clientGone = true
			tap.clientGone()
			if !drain {
				return false
			}
		}
	}
}

// park puts the stream in the poll set when it has nothing to relay,
// detaching the response first; false: relay on in this goroutine.
func (p *pumping) park() bool {
	if p.detached == nil {
		if p.rec.clientGone {
			return false
		}
		done, ok := h1.Detach(p.cw.w)
		if !ok {
			p.mayPark = false
			return false
		}
		p.detached = done
		p.rec.detached = done
		p.wake = func() { go p.resume() }
	}
	first := !p.rec.parked
	if first {
		p.rec.parked = true // before Park: the handler's defers must see it
	}
	p.g.metrics.parked.Inc() // before Park: resume may come first
	if p.rd.Park(p.wake) {
		return true
	}
	p.g.metrics.parked.Dec()
	if first {
		p.rec.parked = false
	}
	return false
}

// resume relays what a parked stream's replica sent, and parks it again
// or ends it.
func (p *pumping) resume() {
	p.g.metrics.parked.Dec()
	defer p.recoverResume()
	if p.run() {
		return
	}
	p.finishDetached()
}

// finishDetached does what the handler's defers would have done, had it
// waited for the stream's end.
func (p *pumping) finishDetached() {
	p.ending = true
	p.end()
	p.rec.leave()
	p.g.finish(p.rec)
	p.detached()
}

// recoverResume is the h1 server's recover for a handler, for the
// goroutines that relay a parked stream: a panic is logged, and the stream
// ends as a cut one, rather than taking the process and every stream in
// it down.
func (p *pumping) recoverResume() {
	v := recover()
	if v == nil {
		return
	}
	if v != http.ErrAbortHandler {
		p.g.log.Error("stream relay panicked", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
	}
	if !p.ending {
		p.rec.upstreamCut = true
		p.finishDetached()
	}
}

// endOnShutdown arranges for the gateway's shutdown to end a legacy
// stream's client side with a last event (stream.end): a standalone GET
// stream with EndStandaloneStreams, any other when the grace is over
// (EndStreamsForShutdown). The returned func, deferred by the relay, waits
// for that last write, which must not outlive the handler.
func (g *Gateway) endOnShutdown(sw *sse.Writer, r *http.Request, tap *stream) func() {
	on := g.ending
	if r.Method == http.MethodGet {
		on = g.standalone
	}
	ended := make(chan struct{})
	g.ends.Add(1)
	stop := context.AfterFunc(on, func() {
		defer close(ended)
		defer g.ends.Add(-1)
		tap.end(sw, g.opts.ResumeRetry)
	})
	return func() {
		if !stop() {
			<-ended
			return
		}
		defer g.ends.Add(-1)
		// The shutdown may have ended the upstream stream (a standalone
		// one's context is a child of on) before its cancel reached the
		// hook: the last event is written here then.
		if on.Err() != nil {
			tap.end(sw, g.opts.ResumeRetry)
		}
	}
}

// writeTo writes a block to the client through the stream, if there is one.
func (s *stream) writeTo(sw *sse.Writer, block []byte, at *session.EventID) error {
	if s == nil {
		return sw.WriteEvent(block)
	}
	return s.write(sw, block, at)
}

// watchesAnswer reports whether the gateway reads the messages of a
// request's answer: for a task it creates, the tools a list declares, an
// idempotent result to record, or an answer to cache.
func (g *Gateway) watchesAnswer(q *request, rec *record) bool {
	return watchesTasks(q) || watchesTools(q) || rec.claim != nil || rec.cachePlan != nil || (rec.span != nil && rec.span.IsRecording())
}

func isEventStream(contentType string) bool {
	if contentType == "text/event-stream" {
		return true
	}
	if contentType == "application/json" {
		return false
	}
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "text/event-stream"
}

// capture passes writes on to w and keeps a copy of the first maxCapture
// bytes, so that the gateway can read the answer it relayed.
type capture struct {
	w    io.Writer
	b    []byte
	over bool
}

const maxCapture = 1 << 20

var captures = sync.Pool{New: func() any { return &capture{b: make([]byte, 0, 1<<10)} }}

func (c *capture) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if len(c.b)+n > maxCapture {
		c.over = true
	} else if !c.over {
		c.b = append(c.b, p[:n]...)
	}
	return n, err
}

// release returns the capture to its pool; large buffers are let go.
func (c *capture) release() {
	c.w = nil
	if cap(c.b) > 64<<10 {
		c.b = nil
		return
	}
	captures.Put(c)
}

var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// openEventStream answers 200 with the headers of an SSE stream the gateway
// makes itself, and returns the writer to the client.
func (g *Gateway) openEventStream(w http.ResponseWriter, rec *record) *clientWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	rec.status = http.StatusOK
	w.WriteHeader(http.StatusOK)
	return newClientWriter(w, g.opts.WriteTimeout)
}

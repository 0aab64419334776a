package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
	"github.com/mcpfleet/mcpfleet/internal/sse"
)

// A replica may hold back its response headers until its first event (the
// Go SDK does), so a tool that runs silent for a minute leaves the client's
// connection silent for a minute, and an idle timeout on the way cuts it
// (the fleet lab's "silent streams"). The gateway therefore opens the SSE stream
// itself when the replica has not answered within one keep-alive interval,
// and then relays whatever the replica sends into that stream: its events,
// a JSON answer as one event, an error as a JSON-RPC error event. The
// 2025-11-25 and 2026-07-28 transports both let a server answer a POST
// request with an SSE stream.

// mayOpenEarly reports whether the gateway may answer with its own SSE
// stream: a single JSON-RPC request (not initialize, whose headers carry the
// session) from a client that accepts SSE, with keep-alives on.
func (g *Gateway) mayOpenEarly(r *http.Request, q *request) bool {
	return g.opts.KeepAlive > 0 && r.Method == http.MethodPost &&
		q.msg.Kind == mcpmsg.KindRequest && !q.msg.Batch && !q.msg.HasInitialize &&
		acceptsEventStream(r.Header.Values("Accept"))
}

// forwardAwait sends the request to its target and waits for the answer.
// If that takes longer than the keep-alive interval and mayOpenEarly
// allows, a timer opens the client's SSE stream meanwhile; the stream's
// writer comes back with the result. The request is sent from the calling
// goroutine: a goroutine and a channel per request cost more than the
// timer, which on most requests never fires.
func (g *Gateway) forwardAwait(ctx context.Context, w http.ResponseWriter, r *http.Request, q *request, t target, rec *record) (sent, *sse.Writer) {
	if !g.mayOpenEarly(r, q) {
		return g.send(ctx, r, q, t, rec), nil
	}
	o := earlyOpeners.Get().(*earlyOpener)
	o.mu.Lock()
	o.g, o.w, o.r, o.rec, o.settled, o.sw = g, w, r, rec, false, nil
	o.mu.Unlock()
	if o.t == nil {
		o.t = time.AfterFunc(g.opts.KeepAlive, o.open)
	} else {
		o.t.Reset(g.opts.KeepAlive)
	}
	res := g.send(ctx, r, q, t, rec)
	stopped := o.t.Stop()
	sw := o.settle()
	if stopped {
		// The timer never ran open: the opener is nobody's now. One that
		// fired may still be in open (which settle has made a no-op), and
		// is left to it.
		o.mu.Lock()
		o.g, o.w, o.r, o.rec, o.sw = nil, nil, nil, nil, nil
		o.mu.Unlock()
		earlyOpeners.Put(o)
	}
	return res, sw
}

// earlyOpeners holds openers with their timers, stopped, for the next
// request: most never fire, and a timer and its callback made for each
// request were three allocations.
var earlyOpeners = sync.Pool{New: func() any { return new(earlyOpener) }}

// earlyOpener opens the client's SSE stream from a timer while the
// handler's goroutine waits on the replica. Its mutex orders the two: once
// settle returns, the timer writes nothing more to the response.
type earlyOpener struct {
	t       *time.Timer // runs open; made once, reset for each request
	g       *Gateway
	w       http.ResponseWriter
	r       *http.Request
	rec     *record
	mu      sync.Mutex
	settled bool
	sw      *sse.Writer // the stream, once opened
}

func (o *earlyOpener) open() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.settled {
		return
	}
	h := o.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	o.rec.status, o.rec.early = http.StatusOK, true
	o.w.WriteHeader(http.StatusOK)
	cw := newClientWriter(o.w, o.g.opts.WriteTimeout)
	o.sw = sse.NewWriter(cw, cw, o.g.opts.KeepAlive)
	o.g.metrics.streams.Inc()
	o.sw.KeepAlive() // the silence so far was one interval long
	o.rec.tap.prime(o.sw)
	// The client may go before the replica's first event: its stream is
	// kept from now (a resume from the priming event).
	o.rec.tap.watch(o.r.Context())
}

// settle stops any later opening and returns the stream if one was opened.
func (o *earlyOpener) settle() *sse.Writer {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.settled = true
	return o.sw
}

// closeEarly ends an early stream's bookkeeping.
func (g *Gateway) closeEarly(sw *sse.Writer, rec *record) {
	sw.Close()
	n := sw.KeepAlives()
	rec.keepAlives += n
	g.metrics.keepAlives.Add(float64(n))
	g.metrics.streams.Dec()
	if sw.Err() != nil {
		rec.clientGone = true
	}
}

// relayLate relays the replica's answer into a stream the gateway opened.
func (g *Gateway) relayLate(sw *sse.Writer, r *http.Request, q *request, resp *http.Response, rec *record) {
	defer g.closeEarly(sw, rec)
	rec.upstreamStatus = resp.StatusCode
	if isEventStream(resp.Header.Get("Content-Type")) && resp.StatusCode < 300 {
		g.pump(sw, sse.NewReader(resp.Body, g.opts.MaxEventBytes), r, q, rec)
		return
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(g.opts.MaxEventBytes)))
	if err != nil && rec.replicaEnded() {
		// The replica went away in the middle of its JSON answer.
		rec.upstreamCut = true
		rec.calls = callsOf(q)
		g.answerLost(sw, rec)
		rec.tap.done()
		return
	}
	if err == nil && json.Valid(body) && len(bytes.TrimSpace(body)) > 0 {
		// The replica's JSON answer (a result, or its own JSON-RPC error)
		// becomes one event.
		g.noteAnswer(q, body, rec)
		_ = sw.WriteEvent(rec.tapped(jsonEvent(g.filterList(q, body))))
		rec.events++
		return
	}
	e := &mcpmsg.Error{Code: mcpmsg.CodeInternalError, Message: fmt.Sprintf("replica answered HTTP %d", resp.StatusCode)}
	_ = sw.WriteEvent(rec.tapped(jsonEvent(e.AppendResponse(nil, q.id()))))
}

// endWithError answers a gateway error inside an early stream, where no
// HTTP status can be sent any more.
func (g *Gateway) endWithError(sw *sse.Writer, e *mcpmsg.Error, q *request, rec *record) {
	defer g.closeEarly(sw, rec)
	rec.rejected = true
	_ = sw.WriteEvent(rec.tapped(jsonEvent(e.AppendResponse(nil, q.id()))))
}

// jsonEvent frames a JSON message as an SSE "message" event. Line breaks in
// the JSON become separate data lines, which the client joins with LF: JSON
// whitespace, so the message decodes the same.
func jsonEvent(msg []byte) []byte {
	var b bytes.Buffer
	b.WriteString("event: message\n")
	for _, line := range bytes.Split(bytes.TrimRight(msg, "\r\n"), []byte{'\n'}) {
		b.WriteString("data: ")
		b.Write(bytes.TrimSuffix(line, []byte{'\r'}))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	return b.Bytes()
}

// acceptsEventStream reports whether an Accept header admits SSE.
func acceptsEventStream(values []string) bool {
	for _, v := range values {
		for v != "" {
			var part string
			part, v, _ = strings.Cut(v, ",")
			mt, _, _ := strings.Cut(part, ";")
			mt = strings.TrimSpace(mt)
			if strings.EqualFold(mt, "text/event-stream") || strings.EqualFold(mt, "text/*") || mt == "*/*" {
				return true
			}
		}
	}
	return false
}

package gateway

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
	"github.com/mcpfleet/mcpfleet/internal/session"
	"github.com/mcpfleet/mcpfleet/internal/sse"
	"github.com/mcpfleet/mcpfleet/internal/streams"
)

// The answers to a resume the gateway cannot serve. Neither is 404, which
// would tell the client its session is gone.
var (
	errBadEventID = &mcpmsg.Error{Status: http.StatusBadRequest, Code: mcpmsg.CodeInvalidRequest, Message: "Last-Event-ID names no event of this session"}
	errStreamGone = &mcpmsg.Error{Status: http.StatusGone, Code: mcpmsg.CodeInvalidRequest, Message: "the stream's events are no longer kept (expired, or dropped over the buffer's bound): it cannot be resumed"}
)

// lastEventID is the resumption header (WHATWG HTML, "Server-sent
// events"), in net/http's canonical spelling.
const lastEventID = "Last-Event-Id"

// handoffWait bounds how long a resume waits for a stream that another
// gateway process is moving to the shared buffer as its client leaves.
const handoffWait = 1500 * time.Millisecond

// openStream prepares the streams of a legacy request within a session:
// a POST's answer is followed (postStream); a GET opens a standalone stream,
// or resumes one (Last-Event-ID). A resume is answered from the buffer when
// it holds the stream; otherwise the returned request goes to the session's
// replica, with the replica's own event ID as its Last-Event-ID when it sent
// one. done reports that the request was answered here.
func (g *Gateway) openStream(w http.ResponseWriter, r *http.Request, q *request, t target, rec *record) (_ *http.Request, done bool) {
	if r.Method == http.MethodPost {
		rec.tap = g.postStream(r, q, t)
		return r, false
	}
	if r.Method != http.MethodGet || q.era != mcpmsg.EraLegacy || q.sessionID == "" || t.pinned == nil {
		return r, false
	}
	last, resumes := r.Header[lastEventID]
	if !resumes {
		rec.tap = g.newStream(q.sessionID, session.EventID{Replica: t.pinned.Name(), Standalone: true}, false)
		return r, false
	}
	id, err := g.keys.OpenEvent(q.sessionID, last[0])
	if err != nil || len(last) != 1 || id.Replica != t.pinned.Name() {
		g.streamMetrics.resumes.WithLabelValues("invalid").Inc()
		rec.reject(w, errBadEventID, nil)
		return r, true
	}
	// An event that carries the replica's own ID resumes at the replica,
	// whatever this gateway kept: the replica keeps every event of its
	// stream, also when it ended the stream itself mid-call (SEP-1699's
	// server-side disconnect), where the gateway's copy was let go with a
	// client that stayed to the end.
	if !id.Standalone && id.Upstream == "" {
		cur, err := g.replayFrom(r.Context(), id)
		switch {
		case err == nil:
			g.streamMetrics.resumes.WithLabelValues("replayed").Inc()
			rec.resume = "replayed"
			g.serveReplay(w, r, cur, rec)
			return r, true
		case errors.Is(err, streams.ErrGone):
			g.streamMetrics.resumes.WithLabelValues("gone").Inc()
			rec.resume = "gone"
			rec.reject(w, errStreamGone, nil)
			return r, true
		default:
			g.streamMetrics.resumes.WithLabelValues("expired").Inc()
			rec.resume = "expired"
			rec.reject(w, errStreamGone, nil)
			return r, true
		}
	}
	out := r.Clone(r.Context())
	if id.Upstream != "" {
		g.streamMetrics.resumes.WithLabelValues("replica").Inc()
		rec.resume = "at_replica"
		out.Header.Set(lastEventID, id.Upstream)
	} else {
		// A standalone stream nobody kept: a new one, as the client would
		// get from a replica that keeps no events.
		g.streamMetrics.resumes.WithLabelValues("new_stream").Inc()
		out.Header.Del(lastEventID)
	}
	rec.tap = g.newStream(q.sessionID, id, false)
	return out, false
}

// replayFrom opens the kept stream id names after its position: this
// process's own first (where it may still be relayed), then the shared
// buffer, waiting a moment there for a stream its gateway is moving to it.
func (g *Gateway) replayFrom(ctx context.Context, id session.EventID) (streams.Cursor, error) {
	key := keyOf(id.Stream)
	cur, err := g.recent.Replay(ctx, key, id.Pos)
	if !errors.Is(err, streams.ErrUnknown) || g.opts.Streams == nil {
		return cur, err
	}
	deadline := time.Now().Add(handoffWait)
	for {
		cur, err = g.opts.Streams.Replay(ctx, key, id.Pos)
		if !errors.Is(err, streams.ErrUnknown) || time.Now().After(deadline) {
			return cur, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// serveReplay answers a resume from the buffer: the events after the
// client's last, then the rest as they come, until the stream ends.
func (g *Gateway) serveReplay(w http.ResponseWriter, r *http.Request, cur streams.Cursor, rec *record) {
	cw := g.openEventStream(w, rec)
	g.metrics.streams.Inc()
	defer g.metrics.streams.Dec()
	sw := sse.NewWriter(cw, cw, max(g.opts.KeepAlive, 0))
	defer sw.Close()
	if sw.KeepAlive(); sw.Err() != nil { // the stream opens at once
		rec.clientGone = true
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(g.standalone, cancel)
	defer stop()
	for {
		ev, err := cur.Next(ctx)
		if err != nil {
			if !errors.Is(err, io.EOF) && r.Context().Err() == nil {
				// Expired or dropped meanwhile, or the gateway is
				// shutting down: the client resumes from its last event
				// and is told there.
				_ = sw.WriteEvent(retryEvent("", g.opts.ResumeRetry))
			}
			return
		}
		if sw.WriteEvent(ev.Data) != nil {
			rec.clientGone = true
			return
		}
		rec.events++
		rec.bytes += int64(len(ev.Data))
		g.streamMetrics.replayed.Inc()
	}
}

// endStandaloneNow answers a legacy GET stream once the gateway has ended
// its standalone streams (EndStandaloneStreams: its shutdown has begun, or
// its service was retired) as it answered the streams it ended: the stream
// opens and at once gets its last event, the sealed ID where it starts (the
// client's own, for a resume) and the retry (SEP-1699), and ends. Such a
// GET still comes: the server lets a connection that has sent no request
// yet send one for a while into its shutdown (as net/http does), and an
// HTTP client keeps such connections from its dial races, so a client's
// reconnection a second later may come on one; or a first GET was sent
// just before. Forwarded, it would go under a context already ended and
// get 502, and the Go SDK's client takes a failed reconnection of its
// standalone stream as its session broken. This way it reconnects after
// the delay, to the process that takes this one's place. It reports
// whether it answered: only such a GET, while its client is there.
func (g *Gateway) endStandaloneNow(w http.ResponseWriter, r *http.Request, rec *record) bool {
	if r.Method != http.MethodGet || rec.tap == nil || g.standalone.Err() == nil || r.Context().Err() != nil {
		return false
	}
	rec.clientGone = false // send took the ended context for the client's going
	cw := g.openEventStream(w, rec)
	sw := sse.NewWriter(cw, cw, 0)
	rec.tap.end(sw, g.opts.ResumeRetry)
	sw.Close()
	return true
}

// retryEvent is the last event of a legacy stream the gateway ends itself
// (its shutdown, an expired replay): a retry field (SEP-1699) for the
// client's reconnection delay, with the ID of the client's last event when
// known, so that an SDK client resumes, through another gateway process if
// this one is going.
func retryEvent(id string, retry time.Duration) []byte {
	b := make([]byte, 0, 32+len(id))
	if id != "" {
		b = append(b, "id: "...)
		b = append(b, id...)
		b = append(b, '\n')
	}
	b = append(b, "retry: "...)
	b = strconv.AppendInt(b, retry.Milliseconds(), 10)
	return append(b, '\n', '\n')
}

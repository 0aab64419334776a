package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
	"github.com/mcpfleet/mcpfleet/internal/session"
	"github.com/mcpfleet/mcpfleet/internal/sse"
	"github.com/mcpfleet/mcpfleet/internal/streams"
)

// Resumable legacy streams (2025-11-25 transports, "Resumability and
// Redelivery"; docs/GATEWAY.md, "Resumable streams"). Every event the
// gateway relays on a legacy SSE stream gets an ID of its own, sealed with
// the session keyring (session.EventID): the replica, the stream, the
// event's position, and the replica's own event ID when it sent one. A
// legacy POST stream's events are also kept in this process (g.recent) as
// they are relayed; when its client goes away, the gateway reads the
// replica's answer on to its end into the buffer (this process's, or the
// shared one of Options.Streams), and a GET with Last-Event-ID through any
// gateway process replays what the client missed, then follows the rest.
// A replica that sent its own event IDs keeps its own event store: then the
// gateway lets go of the upstream stream when the client goes, so that the
// replica answers the resume itself (it would refuse one while the stream
// it names is still open: 409 in the Go SDK).

// stream follows one relayed legacy stream: it seals its events and, for a
// POST stream, keeps them for a resume.
type stream struct {
	g       *Gateway
	session string // the client's sealed Mcp-Session-Id
	key     string // the buffer's key: the stream key in hex
	keep    bool   // a POST stream: its events are kept for a resume
	primes  bool   // the gateway sends a priming event first (SEP-1699)

	mu     sync.Mutex
	id     session.EventID // the last event's: position and the replica's own ID
	primed bool
	gone   bool // the client went away
	shared bool // the events now go to g.opts.Streams
	// toEnd keeps the events past the stream's end even when its client
	// read them all: the gateway answered calls of a lost replica in it
	// (keepToEnd).
	toEnd bool
	// cancelUpstream ends the upstream request; set once forwarded.
	cancelUpstream func()
	// unwatch stops watching the client's context (watch); nil until then.
	unwatch func() bool

	wmu   sync.Mutex      // guards the writes of pump and end to the client, and the two below
	sent  session.EventID // the last event written to the client (at first, where the stream starts)
	ended bool            // the gateway ended the client's stream (end)
}

// newStream starts following a stream of the session's replica; from is the
// event it resumes after (zero for a new stream, which gets a key).
func (g *Gateway) newStream(sessionID string, from session.EventID, keep bool) *stream {
	if from.Stream == (session.StreamKey{}) {
		_, _ = rand.Read(from.Stream[:])
	}
	return &stream{g: g, session: sessionID, id: from, sent: from, keep: keep, key: keyOf(from.Stream)}
}

// keyOf is the buffer key of a stream.
func keyOf(k session.StreamKey) string { return hex.EncodeToString(k[:]) }

// postStream returns the stream of a legacy POST request within a session,
// if its answer may come as one; nil otherwise.
func (g *Gateway) postStream(r *http.Request, q *request, t target) *stream {
	if q.era != mcpmsg.EraLegacy || q.sessionID == "" || t.pinned == nil || q.msg.Kind != mcpmsg.KindRequest || q.msg.Batch {
		return nil
	}
	s := g.newStream(q.sessionID, session.EventID{Replica: t.pinned.Name()}, true)
	// SEP-1699 (2025-11-25): the priming event, an ID and empty data, lets
	// a client resume a stream cut before its first event.
	s.primes = r.Header.Get(mcpmsg.HeaderProtocolVersion) >= "2025-11-25"
	return s
}

// sealIDLocked returns the sealed ID of the event at the stream's position now.
func (s *stream) sealIDLocked() string { return s.sealOf(&s.id) }

// sealOf returns the sealed ID of the event id names.
func (s *stream) sealOf(id *session.EventID) string {
	tok, err := s.g.keys.SealEvent(s.session, *id, rand.Reader)
	if err != nil {
		// The replica's event ID is too long to seal: resuming at the
		// replica is then impossible, so the gateway keeps the stream.
		s.g.log.Warn("sealing an event id failed", "replica", id.Replica, "error", err)
		id.Upstream = ""
		tok, _ = s.g.keys.SealEvent(s.session, *id, rand.Reader)
	}
	return tok
}

// prime writes the priming event once, if the stream sends one: its
// sealed ID, the retry field and empty data.
func (s *stream) prime(sw *sse.Writer) {
	if s == nil || !s.primes {
		return
	}
	s.mu.Lock()
	if s.primed {
		s.mu.Unlock()
		return
	}
	s.primed = true
	at := s.id
	b := append([]byte("id: "), s.sealIDLocked()...)
	// The stream is there to resume from now, before any event.
	_ = s.g.recent.Append(context.Background(), s.key)
	s.mu.Unlock()
	// With the client's reconnection delay (SEP-1699's retry field): a
	// client whose stream is cut waits as long as the gateway asks when it
	// ends a stream itself, rather than its own default.
	b = append(b, "\nretry: "...)
	b = strconv.AppendInt(b, s.g.opts.ResumeRetry.Milliseconds(), 10)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if sw.WriteEvent(append(b, "\ndata: \n\n"...)) == nil {
		s.sent = at
	}
}

// event gives a block from the replica its sealed ID, keeps it if the
// stream is kept, and returns the block to relay. Comments pass as they are.
func (s *stream) event(block []byte) []byte {
	out, _ := s.seal(block)
	return out
}

// seal is event, returning the block's event too (nil for a comment).
func (s *stream) seal(block []byte) ([]byte, *session.EventID) {
	if sse.IsComment(block) {
		return block, nil
	}
	n, own, hadOwn := sse.StrippedLen(block)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.id.Pos++
	if hadOwn && own != "" {
		s.id.Upstream = own
	}
	tok := s.sealIDLocked()
	// The event as the client gets it, in one allocation of its exact
	// size: a kept event holds these bytes and no more, and the relay
	// writes the same slice.
	out := make([]byte, 0, n+len("id: ")+len(tok)+len("\n\n"))
	out, _, _ = sse.StripID(out, block)
	out = append(out, "id: "...)
	out = append(out, tok...)
	out = append(out, '\n', '\n')
	if s.keep {
		s.keepLocked(streams.Event{Pos: s.id.Pos, Data: out})
	}
	at := s.id
	return out, &at
}

// write relays a block (sealed, the event at; nil for a comment) to the
// client, unless the gateway ended the client's stream (errEnded).
func (s *stream) write(sw *sse.Writer, block []byte, at *session.EventID) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.ended {
		return errEnded
	}
	err := sw.WriteEvent(block)
	if err == nil && at != nil {
		s.sent = *at
	}
	return err
}

// errEnded is the write of a stream whose client side the gateway ended.
var errEnded = errors.New("the gateway ended the stream")

// end writes the last event of a stream the gateway ends itself while its
// client is there (SEP-1699, "SSE polling via server-side disconnect"):
// the ID of the last event written to the client, so that its resume
// replays nothing twice and misses nothing (events sealed but not written
// yet are kept, and follow in the replay), and a retry field; no data. No
// event goes to the client after it; the events of a kept stream go on to
// the buffer, as when a client goes (clientGone).
func (s *stream) end(sw *sse.Writer, retry time.Duration) {
	s.wmu.Lock()
	if !s.ended && !s.isGone() {
		s.ended = true
		_ = sw.WriteEvent(retryEvent(s.sealOf(&s.sent), retry))
	}
	s.wmu.Unlock()
	s.clientGone()
}

// keepLocked adds an event to the stream's buffer.
func (s *stream) keepLocked(ev streams.Event) {
	if !s.shared && !s.gone && s.g.mem.Level() >= MemoryShedKeeping {
		// Near the memory budget a stream whose client reads is not kept:
		// its resume window was never promised past the budget. A resume
		// of it is answered as one beyond what was kept.
		s.keep = false
		s.g.recent.Discard(s.key)
		s.g.metrics.memoryShed.WithLabelValues("unkept").Inc()
		return
	}
	if !s.shared {
		_ = s.g.recent.Append(context.Background(), s.key, ev)
		if s.gone {
			s.g.streamMetrics.buffered.Inc()
		}
		return
	}
	ctx, cancel := context.WithTimeout(s.g.base, 2*time.Second)
	defer cancel()
	if err := s.g.opts.Streams.Append(ctx, s.key, ev); err != nil {
		s.g.streamMetrics.storeErrors.Inc()
		return
	}
	s.g.streamMetrics.buffered.Inc()
}

// tapped returns an event the gateway makes itself (a JSON answer in a
// stream it opened, an error) with its sealed ID, kept like the replica's.
func (rec *record) tapped(block []byte) []byte {
	if rec.tap == nil {
		return block
	}
	defer rec.tap.done()
	return rec.tap.event(block)
}

// keepToEnd keeps the stream's events until they expire, also when its
// client reads them to the end: its last events answer calls whose replica
// went away (answerLost), and a client that resumes finds them there,
// rather than a stream nobody kept.
func (s *stream) keepToEnd() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.toEnd = true
}

// replicaKeeps reports whether the replica keeps the stream's events
// itself: it sent event IDs of its own, and a resume goes to it.
func (s *stream) replicaKeeps() bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id.Upstream != ""
}

// isGone reports whether the client went away.
func (s *stream) isGone() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gone
}

// watch calls clientGone as soon as ctx, the client's request context,
// ends: a client whose connection closes is gone now, not at the next
// event, so that its stream moves to the buffer (or its replica is let go
// of) before the client comes back to resume it. It is called when the
// client's stream opens (the gateway's early stream, or the relay of the
// replica's), and done stops it.
func (s *stream) watch(ctx context.Context) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keep && s.unwatch == nil {
		s.unwatch = context.AfterFunc(ctx, s.clientGone)
	}
}

// clientGone notes that the client went away (a failed write, or its
// connection closed). A replica that keeps its own events is let go of at
// once, so that it serves the resume; otherwise the events kept so far
// move to the shared buffer, if there is one, and the rest follow them.
func (s *stream) clientGone() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// keep is read under the lock: done, on the relay's goroutine, clears
	// it while the watch's AfterFunc may be calling this.
	if !s.keep || s.gone {
		return
	}
	s.gone = true
	if s.id.Upstream != "" {
		s.keep = false
		s.g.recent.Discard(s.key)
		if s.cancelUpstream != nil {
			s.cancelUpstream()
		}
		return
	}
	kept := s.g.recent.Events(s.key)
	s.g.streamMetrics.buffered.Add(float64(len(kept)))
	if s.g.opts.Streams == nil {
		return
	}
	s.shared = true
	s.g.recent.Discard(s.key)
	// Even with nothing kept (a client gone after the priming event, before
	// the call's first event) the stream goes to the shared buffer now, so
	// that a resume through another gateway finds it rather than a 410.
	ctx, cancel := context.WithTimeout(s.g.base, 2*time.Second)
	defer cancel()
	if err := s.g.opts.Streams.Append(ctx, s.key, kept...); err != nil {
		s.g.streamMetrics.storeErrors.Inc()
	}
}

// done ends the stream's keeping when the replica's stream has ended: a
// client that stayed to the end needs nothing kept; for one that went, the
// buffer marks the stream complete, so that replays end after its last
// event.
func (s *stream) done() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.unwatch != nil {
		s.unwatch()
	}
	switch {
	case !s.keep:
	case !s.gone && !s.toEnd:
		s.g.recent.Discard(s.key)
		s.keep = false // a client going now has had every event
	case s.shared:
		ctx, cancel := context.WithTimeout(s.g.base, 2*time.Second)
		defer cancel()
		if err := s.g.opts.Streams.End(ctx, s.key); err != nil {
			s.g.streamMetrics.storeErrors.Inc()
		}
	default:
		_ = s.g.recent.End(context.Background(), s.key)
	}
}

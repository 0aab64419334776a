package stdio

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
)

// bsession is a 2025-11-25 session of the bridge: a Session on the child,
// and the HTTP answers waiting for its messages. A message of the child
// goes to the POST whose request it answers or whose progress it
// reports; anything else to the session's GET stream, or to a waiting
// POST's stream when none is open (2025-11-25, "Sending Messages to the
// Server": a server may send requests and notifications on either).
type bsession struct {
	s     *Session
	lease *Lease // the session's own child (per_session); nil on a shared one
	end   func() // removes the session from its bridge

	mu      sync.Mutex             // guards calls, tokens, stream
	calls   map[string]chan []byte // the client's request id (idKey) -> its POST
	tokens  map[string]chan []byte // a call's progress token (idKey) -> its POST
	stream  chan []byte            // the GET stream; nil when none
	settled bool                   // the child's messages ended
	last    time.Time              // the last request's arrival
}

// touch notes a request at now.
func (b *bsession) touch(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.last = now
}

// idleSince is how long the session has been idle at now: 0 while a call
// or a stream is open.
func (b *bsession) idleSince(now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.calls) > 0 || b.stream != nil {
		return 0
	}
	return now.Sub(b.last)
}

// quietSince is how long the session has been without a request at now:
// 0 while a call is in flight (an open GET stream is no request).
func (b *bsession) quietSince(now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.calls) > 0 {
		return 0
	}
	return now.Sub(b.last)
}

func newBSession(s *Session, lease *Lease, end func()) *bsession {
	b := &bsession{s: s, lease: lease, end: end, calls: map[string]chan []byte{}, tokens: map[string]chan []byte{}, last: time.Now()}
	if lease != nil {
		lease.SetQuiet(b.quietSince)
	}
	go b.dispatch()
	return b
}

// close ends the session; a child of its own is stopped with it.
func (b *bsession) close() {
	if b.lease != nil {
		b.lease.Close()
		return
	}
	b.s.Close()
}

// dispatch hands each message of the child to its waiter until the
// session ends; then every waiter's channel closes.
func (b *bsession) dispatch() {
	for msg := range b.s.Messages() {
		b.route(msg)
	}
	b.end()
	b.settle()
	if b.lease != nil { // its child exited, or the session was closed
		b.lease.Close()
	}
}

// settle closes every waiter's channel: their answers are the
// replica_lost error, at once.
func (b *bsession) settle() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.settled = true
	for k, ch := range b.calls {
		close(ch)
		delete(b.calls, k)
	}
	if b.stream != nil {
		close(b.stream)
		b.stream = nil
	}
}

func (b *bsession) route(msg []byte) {
	// What the session gets the mux has read already (or the gateway
	// wrote): it scans as a frame, and the few members read here are
	// found in place.
	f, _ := parseFrame(msg)
	method := f.methodName()
	b.mu.Lock()
	defer b.mu.Unlock()
	var ch chan []byte
	switch {
	case method == "" && hasID(f.rawID()):
		if ch = b.calls[idKey(f.rawID())]; ch == nil {
			return // the answer of a call whose client left
		}
	case method == "notifications/progress":
		token, _ := f.param("progressToken")
		ch = b.tokens[idKey(f.raw(token))]
	}
	if ch == nil {
		ch = b.stream
	}
	for _, c := range b.calls {
		if ch != nil {
			break
		}
		ch = c
	}
	if ch == nil {
		return // nobody listens: as a server's message on no open stream
	}
	select {
	case ch <- msg:
	default:
		// A waiter 64 messages behind loses a notification; an answer
		// takes the place of the oldest one, for a call's answer must
		// never be lost (only this goroutine sends, under b.mu).
		if method == "" {
			select {
			case <-ch:
			default:
			}
			ch <- msg
		}
	}
}

// serveCall sends a request and answers with what comes for it: its
// answer as JSON when nothing came before, else an SSE stream that ends
// with the answer.
func (b *bsession) serveCall(w http.ResponseWriter, r *http.Request, body, id []byte) {
	key := idKey(id)
	ch := make(chan []byte, 64)
	b.mu.Lock()
	if _, dup := b.calls[key]; dup || b.settled {
		b.mu.Unlock()
		writeError(w, id, &mcpmsg.Error{Status: http.StatusBadRequest, Code: mcpmsg.CodeInvalidRequest, Message: "a request with this id is in flight on the session"})
		return
	}
	b.calls[key] = ch
	token := progressTokenOf(body)
	if token != "" {
		b.tokens[token] = ch
	}
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.calls, key)
		delete(b.tokens, token)
		b.mu.Unlock()
	}()
	if err := b.s.Send(body); err != nil && !errors.Is(err, ErrWrite) {
		writeError(w, id, sendError(err))
		return
	}
	// As an HTTP server of the SDKs does (2025-11-25, "Sending Messages
	// to the Server"), a request is answered on an SSE stream when the
	// client takes one: the gateway primes it (SEP-1699), and a client
	// that loses it mid-call can resume it.
	relay(w, r, ch, id, b.s.c.opts.Name, relayOpts{sse: acceptsSSE(r)})
}

// acceptsSSE reports whether r's Accept names text/event-stream.
func acceptsSSE(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		if strings.Contains(v, "text/event-stream") {
			return true
		}
	}
	return false
}

// startStream answers with an SSE stream, its header sent at once.
func startStream(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// relayOpts shape how relay answers.
type relayOpts struct {
	// sse answers on an SSE stream from the start; else only once a
	// message comes before the answer.
	sse bool
	// sseResult answers a result that comes first on an SSE stream too,
	// and an error as JSON (with status), as the Go SDK's HTTP server
	// answers a 2026-07-28 request of a client that takes a stream.
	sseResult bool
	// fix, when not nil, rewrites each message first; a nil message
	// from it is not relayed.
	fix func([]byte) []byte
	// status, when not nil, gives the HTTP status of an answer sent as
	// JSON; else 200.
	status func([]byte) int
}

// relay writes the messages of ch until the answer to id: on an SSE
// stream, or as one JSON answer (o says when). A channel that closes
// first means the child went away: the answer is the replica_lost error.
// It reports whether the answer was written: false when the client left
// first.
func relay(w http.ResponseWriter, r *http.Request, ch <-chan []byte, id []byte, child string, o relayOpts) bool {
	streaming := o.sse
	if o.sse {
		startStream(w)
	}
	for {
		var msg []byte
		select {
		case <-r.Context().Done():
			return false // a dropped 2025-11-25 stream is no cancel; the answer is dropped
		case m, ok := <-ch:
			if !ok {
				m = lostAnswer(child, id)
			}
			msg = m
		}
		if o.fix != nil {
			if msg = o.fix(msg); msg == nil {
				continue
			}
		}
		final := mcpmsg.IsResponseTo(msg, id)
		if !streaming && final && !(o.sseResult && isResult(msg)) {
			w.Header().Set("Content-Type", "application/json")
			if o.status != nil {
				w.WriteHeader(o.status(msg))
			}
			_, _ = w.Write(msg)
			return true
		}
		if !streaming {
			startStream(w)
			streaming = true
		}
		writeEvent(w, msg)
		if final {
			return true
		}
	}
}

// isResult reports whether msg is an answer with a result.
func isResult(msg []byte) bool {
	f, err := parseFrame(msg)
	return err == nil && f.result.present()
}

func writeEvent(w http.ResponseWriter, msg []byte) {
	var b bytes.Buffer
	b.WriteString("event: message\ndata: ")
	b.Write(msg)
	b.WriteString("\n\n")
	_, _ = w.Write(b.Bytes())
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// serveStream serves the session's GET stream: server notifications and
// requests outside any call, until the client leaves or the session ends.
func (b *bsession) serveStream(w http.ResponseWriter, r *http.Request) {
	ch := make(chan []byte, 64)
	b.mu.Lock()
	if b.stream != nil || b.settled {
		b.mu.Unlock()
		writeError(w, nil, &mcpmsg.Error{Status: http.StatusConflict, Code: mcpmsg.CodeInvalidRequest, Message: "the session has a stream open"})
		return
	}
	b.stream = ch
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		if b.stream == ch {
			b.stream = nil
		}
		b.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	keep := time.NewTicker(15 * time.Second)
	defer keep.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case msg, ok := <-ch:
			if !ok {
				return
			}
			writeEvent(w, msg)
		case <-keep.C:
			_, _ = w.Write([]byte(": keepalive\n\n"))
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
		}
	}
}

// progressTokenOf returns a request's params._meta.progressToken (idKey),
// "" if none.
func progressTokenOf(body []byte) string {
	f, err := parseFrame(body)
	if err != nil {
		return ""
	}
	token, err := f.progressToken()
	if err != nil || !token.present() {
		return ""
	}
	return idKey(f.raw(token))
}

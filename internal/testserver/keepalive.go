package testserver

import (
	"bufio"
	"bytes"
	"mime"
	"net"
	"net/http"
	"sync"
	"time"
)

// keepAliveComment is the SSE comment written on a silent stream. A line
// starting with a colon is ignored by clients (WHATWG HTML §9.2.6).
const keepAliveComment = ": keepalive\n\n"

// sseWriter is an http.ResponseWriter that writes a keep-alive comment
// whenever its text/event-stream response has been silent for every.
//
// The SDK writes each event with one Write followed by a Flush (mcp's
// writeEvent), so comments can go between its writes. sseWriter writes one
// only when the bytes so far end with a blank line, the end of an event,
// whatever the handler does.
//
// A POST stream is silent until its first event, and its headers are not
// written yet: whether it will be SSE is in headers the SDK set on another
// goroutine. sseWriter reads them only once the SDK has started a method
// handler for one of the stream's requests (arm), which the SDK orders after
// it set them, and not after the SDK asks for the headers again, until it
// writes.
type sseWriter struct {
	rw    http.ResponseWriter
	every time.Duration

	mu       sync.Mutex  // guards the fields below and every use of rw
	timer    *time.Timer // runs tick
	last     time.Time   // when the stream last carried bytes, or began
	tail     []byte      // the last bytes written, at most 4
	wrote    bool        // the headers are written
	sse      bool        // the headers written say text/event-stream, status 200
	armed    bool        // a request on the stream is being handled: its headers are set
	dirty    bool        // the handler asked for the headers since it was armed
	finished bool        // the handler returned or hijacked: rw is not to be used
}

// newSSEWriter wraps rw.
func newSSEWriter(rw http.ResponseWriter, every time.Duration) *sseWriter {
	w := &sseWriter{rw: rw, every: every, last: time.Now()}
	w.timer = time.AfterFunc(every, w.tick)
	return w
}

// Header returns the response headers. Changes to them are the caller's
// until its next Write, WriteHeader or Flush, so keep-alives stop reading
// them until then.
func (w *sseWriter) Header() http.Header {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.armed {
		w.dirty = true
	}
	return w.rw.Header()
}

// WriteHeader writes the response headers with code.
func (w *sseWriter) WriteHeader(code int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.commitLocked(code)
	w.rw.WriteHeader(code)
	w.last = time.Now()
}

// Write writes p, and the headers first if they are not written yet.
func (w *sseWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.commitLocked(http.StatusOK)
	n, err := w.rw.Write(p)
	w.noteLocked(p[:n])
	return n, err
}

// Flush sends what was written to the client.
func (w *sseWriter) Flush() { _ = w.FlushError() }

// FlushError sends what was written to the client, as
// http.ResponseController.Flush asks.
func (w *sseWriter) FlushError() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.commitLocked(http.StatusOK)
	return http.NewResponseController(w.rw).Flush()
}

// Hijack takes over the connection; no keep-alive is written after it.
func (w *sseWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.finished = true
	w.timer.Stop()
	return http.NewResponseController(w.rw).Hijack()
}

// Unwrap returns the wrapped writer, for http.ResponseController.
func (w *sseWriter) Unwrap() http.ResponseWriter { return w.rw }

// arm records that a request on the stream is being handled, so its
// headers are set and may be read.
func (w *sseWriter) arm() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed, w.dirty = true, false
}

// close stops the keep-alives; the handler has returned.
func (w *sseWriter) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.finished = true
	w.timer.Stop()
}

// commitLocked records that the headers go out now with code, unless they
// went out before.
func (w *sseWriter) commitLocked(code int) {
	if w.wrote {
		return
	}
	w.wrote = true
	w.sse = code == http.StatusOK && isEventStream(w.rw.Header())
}

// noteLocked records that p went out.
func (w *sseWriter) noteLocked(p []byte) {
	if len(p) == 0 {
		return
	}
	w.last = time.Now()
	w.tail = append(w.tail, p[max(0, len(p)-4):]...)
	w.tail = w.tail[max(0, len(w.tail)-4):]
}

// tick writes a keep-alive comment if the stream has been silent for every
// and may carry one, and sets the timer for the next check.
func (w *sseWriter) tick() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.finished || (w.wrote && !w.sse) {
		return // not an SSE response: no keep-alives, ever
	}
	wait := w.every - time.Since(w.last)
	if wait > 0 {
		w.timer.Reset(wait)
		return
	}
	if !w.mayCommentLocked() {
		w.timer.Reset(max(w.every/8, time.Millisecond)) // look again soon
		return
	}
	if !w.wrote {
		w.commitLocked(http.StatusOK)
		if !w.sse {
			return
		}
	}
	if _, err := w.rw.Write([]byte(keepAliveComment)); err != nil {
		w.finished = true // the client is gone
		return
	}
	_ = http.NewResponseController(w.rw).Flush() // best effort, as the SDK's
	w.noteLocked([]byte(keepAliveComment))
	w.timer.Reset(w.every)
}

// mayCommentLocked reports whether a comment may be written now: on an SSE
// response between events, or on one whose headers are set but not written.
func (w *sseWriter) mayCommentLocked() bool {
	if w.wrote {
		return w.sse && atEventEnd(w.tail)
	}
	return w.armed && !w.dirty && isEventStream(w.rw.Header())
}

// atEventEnd reports whether tail, the last bytes written, ends an SSE
// event or comment: with a blank line, whichever of CRLF, LF or CR ends its
// lines (WHATWG HTML §9.2.5). Nothing written yet is an end too.
func atEventEnd(tail []byte) bool {
	return len(tail) == 0 ||
		bytes.HasSuffix(tail, []byte("\n\n")) ||
		bytes.HasSuffix(tail, []byte("\r\r")) ||
		bytes.HasSuffix(tail, []byte("\r\n\r\n"))
}

// isEventStream reports whether h says the body is text/event-stream.
func isEventStream(h http.Header) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && mt == "text/event-stream"
}

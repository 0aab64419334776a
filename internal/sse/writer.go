package sse

import (
	"io"
	"sync"
	"time"
)

// Flusher sends buffered bytes to the client; http.ResponseController and
// http.Flusher provide it.
type Flusher interface {
	Flush() error
}

// KeepAliveComment is what the writer sends in a silence. A comment line
// dispatches nothing in the client, yet resets every idle timer on the way.
var KeepAliveComment = []byte(": keep-alive\n\n")

// Writer writes whole events to a client and flushes each at once. With a
// keep-alive interval it also sends a comment whenever the stream has been
// silent that long, so that no proxy on the way cuts it for idling
// (2025-11-25 transports leave this to implementations; the fleet lab's "silent
// streams"). Writes from the relay and from the keep-alive timer never
// interleave inside an event.
type Writer struct {
	every time.Duration

	mu     sync.Mutex // guards everything below, and writes to w
	w      io.Writer
	f      Flusher
	timer  *time.Timer
	err    error // first write error; the stream is dead after it
	closed bool
	kept   int // keep-alive comments sent
}

// NewWriter returns a Writer to w, flushed by f. every <= 0 turns keep-alives
// off. Close stops the keep-alive timer.
func NewWriter(w io.Writer, f Flusher, every time.Duration) *Writer {
	sw := &Writer{w: w, f: f, every: every}
	if every > 0 {
		sw.mu.Lock() // the timer may fire before the field is set
		sw.timer = time.AfterFunc(every, sw.KeepAlive)
		sw.mu.Unlock()
	}
	return sw
}

// WriteEvent writes one whole event block and flushes it. After a failed
// write every call returns the same error.
func (sw *Writer) WriteEvent(block []byte) error {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if err := sw.writeLocked(block); err != nil {
		return err
	}
	if sw.timer != nil && !sw.closed {
		sw.timer.Reset(sw.every)
	}
	return nil
}

// KeepAlives returns how many keep-alive comments were sent.
func (sw *Writer) KeepAlives() int {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	return sw.kept
}

// Close stops keep-alives. It does not close the underlying writer. It is
// safe to call more than once.
func (sw *Writer) Close() {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.closed = true
	if sw.timer != nil {
		sw.timer.Stop()
	}
}

// KeepAlive sends a keep-alive comment now; the timer calls it after each
// silence. It does nothing once the writer is closed or has failed.
func (sw *Writer) KeepAlive() {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.closed || sw.err != nil {
		return
	}
	if sw.writeLocked(KeepAliveComment) == nil {
		sw.kept++
		if sw.timer != nil {
			sw.timer.Reset(sw.every)
		}
	}
}

// Err returns the first write error, nil while the stream is alive.
func (sw *Writer) Err() error {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	return sw.err
}

func (sw *Writer) writeLocked(b []byte) error {
	if sw.err != nil {
		return sw.err
	}
	if _, err := sw.w.Write(b); err != nil {
		sw.err = err
		return err
	}
	if err := sw.f.Flush(); err != nil {
		sw.err = err
		return err
	}
	return nil
}

package gateway

import (
	"net/http"
	"sync"
	"time"
)

// clientWriter writes to the client with a bound on every write and flush,
// so that a client that stops reading is cut instead of holding the relay
// forever.
//
// The bound is a timer, not a deadline set before each write and lifted
// after: nearly every write is taken at once, and for those a timer
// started and stopped costs less than a deadline set and lifted, which is
// two messages to the connection's serving goroutine over HTTP/2 and two
// changes of the socket's timer over HTTP/1.1. Should a write take longer
// than the bound, the timer puts the write deadline in the past, which
// fails the write (HTTP/1.1) or resets the stream (HTTP/2); the client is
// then let go (fail). The timer comes from a pool for each write, so that
// a stream that waits for hours between events holds none. Writes are not
// concurrent: the SSE writer holds its lock around them.
type clientWriter struct {
	w       http.ResponseWriter
	rc      http.ResponseController
	timeout time.Duration // the bound; 0 or less: none
	failed  bool
}

func newClientWriter(w http.ResponseWriter, timeout time.Duration) *clientWriter {
	return &clientWriter{w: w, rc: *http.NewResponseController(w), timeout: timeout}
}

func (c *clientWriter) Write(p []byte) (int, error) {
	b := c.arm()
	n, err := c.w.Write(p)
	if c.disarm(b, err) != nil {
		c.fail()
	}
	return n, err
}

func (c *clientWriter) Flush() error {
	b := c.arm()
	err := c.disarm(b, c.rc.Flush())
	if err != nil {
		c.fail()
	}
	return err
}

// fail marks the client gone and lets its connection go at once: whatever
// the relay still reads from the replica no longer needs it.
func (c *clientWriter) fail() {
	if !c.failed {
		c.failed = true
		abortClient(&c.rc)
	}
}

// arm starts the bound of one write; nil when there is none.
func (c *clientWriter) arm() *writeBound {
	if c.timeout <= 0 {
		return nil
	}
	b := writeBounds.Get().(*writeBound)
	b.arm(&c.rc, c.timeout)
	return b
}

// disarm stops b after the write or flush that returned err, and gives it
// back to the pool unless its timer fired (its fire may still be on its
// way). A write the bound cut but that went through all the same (it ended
// as the timer fired) lifts the deadline again: the next write has its
// own bound.
func (c *clientWriter) disarm(b *writeBound, err error) error {
	if b == nil {
		return err
	}
	if b.disarm() && err == nil {
		_ = c.rc.SetWriteDeadline(time.Time{})
	}
	if b.reusable() {
		writeBounds.Put(b)
	}
	return err
}

var writeBounds = sync.Pool{New: func() any { return new(writeBound) }}

// writeBound is the timer of one write (or flush) at a time: armed before
// it, disarmed after. If it fires first, it sets a write deadline in the
// past on the client's connection or stream.
type writeBound struct {
	t *time.Timer

	mu    sync.Mutex // guards the fields below
	gen   uint64     // t's number: a fire of an earlier timer does nothing
	rc    *http.ResponseController
	armed bool // a write is on its way
	fired bool // fire set the deadline during this write
	spent bool // t fired, or may have: its fire may still be on its way
}

func (b *writeBound) arm(rc *http.ResponseController, timeout time.Duration) {
	b.mu.Lock()
	b.rc, b.armed, b.fired = rc, true, false
	fresh := b.t == nil || b.spent
	if fresh {
		b.gen++
		b.spent = false
	}
	gen := b.gen
	b.mu.Unlock()
	if fresh {
		b.t = time.AfterFunc(timeout, func() { b.fire(gen) })
	} else {
		b.t.Reset(timeout) // stopped before it fired: nothing of it is on its way
	}
}

func (b *writeBound) fire(gen uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if gen != b.gen || !b.armed {
		return
	}
	b.fired = true
	_ = b.rc.SetWriteDeadline(time.Unix(1, 0))
}

// disarm ends the bound of the write that is over and reports whether it
// fired meanwhile.
func (b *writeBound) disarm() (fired bool) {
	stopped := b.t.Stop()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.spent = b.spent || !stopped
	fired = b.fired
	b.armed, b.fired = false, false
	return fired
}

// reusable reports whether no fire of the bound's timer can still come,
// and forgets its writer.
func (b *writeBound) reusable() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rc = nil
	return !b.spent
}

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
// then let go (fail). Writes are not concurrent: the SSE writer holds its
// lock around them.
type clientWriter struct {
	w       http.ResponseWriter
	rc      http.ResponseController
	timeout time.Duration // the bound; 0 or less: none
	failed  bool
	bound   *writeBound // nil until the first write
	pooled  bool        // bound came from writeBounds (pooledBound)
}

func newClientWriter(w http.ResponseWriter, timeout time.Duration) *clientWriter {
	return &clientWriter{w: w, rc: *http.NewResponseController(w), timeout: timeout}
}

func (c *clientWriter) Write(p []byte) (int, error) {
	c.arm()
	n, err := c.w.Write(p)
	if c.disarm(err) != nil {
		c.fail()
	}
	return n, err
}

func (c *clientWriter) Flush() error {
	c.arm()
	err := c.disarm(c.rc.Flush())
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

func (c *clientWriter) arm() {
	if c.timeout <= 0 {
		return
	}
	if c.bound == nil {
		c.bound = &writeBound{}
	}
	c.bound.arm(&c.rc, c.timeout)
}

// disarm stops the bound after a write or flush that returned err. A
// write the bound cut but that went through all the same (it ended as the
// timer fired) lifts the deadline again: the next write has its own bound.
func (c *clientWriter) disarm(err error) error {
	if c.bound == nil {
		return err
	}
	if c.bound.disarm() && err == nil {
		_ = c.rc.SetWriteDeadline(time.Time{})
	}
	return err
}

// pooledBound gives c a bound from the pool, for an answer whose writes
// all happen before releaseBound (a JSON answer, relayed by the handler's
// goroutine): a timer allocated per answer would be the hot path's.
func (c *clientWriter) pooledBound() {
	if c.timeout > 0 && c.bound == nil {
		c.bound, c.pooled = writeBounds.Get().(*writeBound), true
	}
}

// releaseBound returns a pooled bound once the answer's writes are over;
// one whose timer fired is left to it.
func (c *clientWriter) releaseBound() {
	if c.pooled && c.bound.reusable() {
		writeBounds.Put(c.bound)
	}
	c.bound, c.pooled = nil, false
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

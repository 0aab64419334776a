package gateway

import (
	"net/http"
	"time"
)

// clientWriter writes to the client with a bound on every write and flush,
// so that a client that stops reading is cut instead of holding the relay
// forever.
//
// The bound is a lateTimer, taken from its pool for each write: no deadline
// unless a write takes longer, and no timer held by a stream that waits
// for hours between events. A write cut at its bound fails, and the client
// is let go (fail). Writes are not concurrent: the SSE writer holds its
// lock around them.
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
func (c *clientWriter) arm() *lateTimer {
	if c.timeout <= 0 {
		return nil
	}
	return armLate(c.w, writeDeadline, c.timeout)
}

// disarm ends b, if any, after the write or flush that returned err.
func (c *clientWriter) disarm(b *lateTimer, err error) error {
	if b != nil {
		b.disarm(err == nil)
	}
	return err
}

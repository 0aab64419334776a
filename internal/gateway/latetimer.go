package gateway

import (
	"net/http"
	"sync"
	"time"
)

// lateTimer bounds one read of a request's body, or one write to its
// client, to a timeout. The deadline is set only should the read or write
// take longer: the timer puts it in the past then, which fails a read or
// write on HTTP/1.1 and resets the stream on HTTP/2. Setting a deadline
// before each read or write and lifting it after costs HTTP/2 two messages
// to the connection's serving goroutine and two timers (6% of the
// gateway's CPU under h2load for the body's alone) and HTTP/1.1 two
// changes of the socket's timer; one that is over at once costs a pooled
// timer, started and stopped.
type lateTimer struct {
	t     *time.Timer
	mu    sync.Mutex // guards the fields below
	w     http.ResponseWriter
	which deadlineKind
	done  bool // the read or write is over: fire sets nothing
	fired bool // fire set the deadline
}

// deadlineKind is which of a ResponseController's deadlines a lateTimer
// sets.
type deadlineKind bool

const (
	readDeadline  deadlineKind = false
	writeDeadline deadlineKind = true
)

var lateTimers = sync.Pool{New: func() any { return new(lateTimer) }}

// armLate bounds what follows to timeout until the returned timer's
// disarm.
func armLate(w http.ResponseWriter, which deadlineKind, timeout time.Duration) *lateTimer {
	lt := lateTimers.Get().(*lateTimer)
	lt.mu.Lock()
	lt.w, lt.which, lt.done, lt.fired = w, which, false, false
	lt.mu.Unlock()
	if lt.t == nil {
		lt.t = time.AfterFunc(timeout, lt.fire)
	} else {
		lt.t.Reset(timeout)
	}
	return lt
}

func (lt *lateTimer) fire() {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	if !lt.done {
		lt.fired = true
		_ = lt.set(time.Unix(1, 0))
	}
}

// set sets the deadline the timer bounds; under mu.
func (lt *lateTimer) set(t time.Time) error {
	rc := http.NewResponseController(lt.w)
	if lt.which == writeDeadline {
		return rc.SetWriteDeadline(t)
	}
	return rc.SetReadDeadline(t)
}

// disarm ends the bound once the read or write is over: ok says it went
// through. A deadline the timer set is lifted only after one that went
// through (it ended as the timer fired): after a failed one the
// connection or stream is of no further use. A timer stopped before it
// fired goes back to the pool; one that fired may still be running fire,
// and is left to it.
func (lt *lateTimer) disarm(ok bool) {
	stopped := lt.t.Stop()
	lt.mu.Lock()
	lt.done = true
	if lt.fired && ok {
		_ = lt.set(time.Time{})
	}
	lt.mu.Unlock()
	if stopped {
		lt.w = nil
		lateTimers.Put(lt)
	}
}

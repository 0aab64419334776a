package testserver

import (
	"context"
	"slices"
	"sync"
)

// slots admits tool calls as the fleet lab's modelled replica does: at most
// n run at once and the others wait in a queue, first come first served. A
// waiting call whose context ends leaves the queue without running. With n
// zero every call runs at once, and slots only counts them. The zero value
// admits every call.
type slots struct {
	n int // most calls running at once; 0 means no limit

	mu      sync.Mutex // guards running, queue and closed
	running int        // calls holding a slot
	queue   []*waiter  // calls waiting, oldest first
	closed  bool       // close was called: no call gets a slot any more
}

// waiter is one call waiting for a slot.
type waiter struct {
	granted chan struct{} // closed when the call is given a slot
}

// acquire waits for a slot, first come first served, and returns nil once
// the caller holds one, which it must give back with release. It returns the
// cause of ctx ending, or errStopped once the slots are closed, without a
// slot.
func (l *slots) acquire(ctx context.Context) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return errStopped
	}
	if ctx.Err() != nil {
		l.mu.Unlock()
		return context.Cause(ctx)
	}
	if l.freeLocked() && len(l.queue) == 0 {
		l.running++
		l.mu.Unlock()
		return nil
	}
	w := &waiter{granted: make(chan struct{})}
	l.queue = append(l.queue, w)
	l.mu.Unlock()

	select {
	case <-w.granted:
		return nil
	case <-ctx.Done():
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if i := slices.Index(l.queue, w); i >= 0 {
		l.queue = slices.Delete(l.queue, i, i+1)
		return context.Cause(ctx)
	}
	// Granted as ctx ended: the call must not run, so hand the slot on.
	l.running--
	l.grantLocked()
	return context.Cause(ctx)
}

// release gives back a slot taken by acquire and hands it to the oldest
// waiting call.
func (l *slots) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.running--
	l.grantLocked()
}

// freeLocked reports whether one more call may run now.
func (l *slots) freeLocked() bool {
	return !l.closed && (l.n == 0 || l.running < l.n)
}

// grantLocked gives free slots to the oldest waiting calls.
func (l *slots) grantLocked() {
	for len(l.queue) > 0 && l.freeLocked() {
		w := l.queue[0]
		l.queue = slices.Delete(l.queue, 0, 1)
		l.running++
		close(w.granted)
	}
}

// load returns how many calls hold a slot and how many wait for one.
func (l *slots) load() (running, queued int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.running, len(l.queue)
}

// close stops granting slots, for good, and returns how many calls held one
// at that moment. The calls still waiting stay queued until their contexts
// end. close is idempotent.
func (l *slots) close() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	return l.running
}

package stdio

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// drainPoll is how often a draining child's sessions are counted.
const drainPoll = 50 * time.Millisecond

// A Rolling serves the replica of one child name: its current child's
// bridge and, while a reload replaces that child, the bridges of the
// children it replaced, for the sessions they still hold. A replaced
// child takes no new session (initialize and 2026-07-28 requests go to
// the current one); its sessions go on until they end or the grace
// passes; then its process group is stopped. The replica keeps its name,
// so the sealed session IDs that name it keep working. Its methods are
// safe for concurrent use.
type Rolling struct {
	stop chan struct{}  // closed by Close: the drains end now
	wg   sync.WaitGroup // the drains

	mu      sync.Mutex // guards cur, old, closed, retired
	cur     *Bridge
	old     []*Bridge
	closed  bool
	retired bool
}

// NewRolling returns the replica served by b.
func NewRolling(b *Bridge) *Rolling {
	return &Rolling{stop: make(chan struct{}), cur: b}
}

// ServeHTTP serves a request of a session a replaced child holds on that
// child's bridge, and every other request on the current one.
func (r *Rolling) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.pick(req.Header.Get(headerSession)).ServeHTTP(w, req)
}

func (r *Rolling) pick(sid string) *Bridge {
	r.mu.Lock()
	defer r.mu.Unlock()
	if sid != "" {
		for _, b := range r.old {
			if b.session(sid) != nil {
				return b
			}
		}
	}
	return r.cur
}

// Child returns the current child.
func (r *Rolling) Child() *Child {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur.child
}

// StatelessChild returns the state of the current bridge's stateless
// twin; false before it started, or without one.
func (r *Rolling) StatelessChild() (Info, bool) {
	r.mu.Lock()
	cur := r.cur
	r.mu.Unlock()
	return cur.StatelessChild()
}

// SessionChildren returns the state of the per-session children of the
// replica's bridges, the current one's and those draining.
func (r *Rolling) SessionChildren() []Info {
	r.mu.Lock()
	bridges := append([]*Bridge{r.cur}, r.old...)
	r.mu.Unlock()
	var out []Info
	for _, b := range bridges {
		out = append(out, b.SessionChildren()...)
	}
	return out
}

// Replace waits until next's child is ready, then makes next the current
// bridge and drains the one it replaces for at most grace (see Rolling).
// If next's child is not ready when ctx ends, or the replica is closed or
// retired, next's child is stopped and the current one stays.
func (r *Rolling) Replace(ctx context.Context, next *Bridge, grace time.Duration) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-r.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := next.child.Ready(ctx); err != nil {
		next.Close()
		return fmt.Errorf("replacing stdio child %s: %w", next.child.Name(), err)
	}
	r.mu.Lock()
	if r.closed || r.retired {
		r.mu.Unlock()
		next.Close()
		return fmt.Errorf("replacing stdio child %s: the replica is stopping", next.child.Name())
	}
	prev := r.cur
	r.cur = next
	r.old = append(r.old, prev)
	r.wg.Add(1)
	r.mu.Unlock()
	go r.drain(prev, grace, nil)
	return nil
}

// Retire drains the current child as Replace drains a replaced one, for
// a replica that leaves the fleet, then calls done (if not nil): when
// its sessions ended, the grace passed, or Close.
func (r *Rolling) Retire(grace time.Duration, done func()) {
	r.mu.Lock()
	if r.closed || r.retired {
		r.mu.Unlock()
		return
	}
	r.retired = true
	r.wg.Add(1)
	cur := r.cur
	r.mu.Unlock()
	go r.drain(cur, grace, done)
}

// drain stops b's child once it holds no session or grace has passed
// (or at Close), and stops serving it.
func (r *Rolling) drain(b *Bridge, grace time.Duration, done func()) {
	defer r.wg.Done()
	end := time.Now().Add(grace)
	t := time.NewTicker(drainPoll)
	defer t.Stop()
	for !drained(b.sessionCount(), time.Now(), end) {
		select {
		case <-r.stop:
			end = time.Time{}
		case <-t.C:
		}
	}
	b.Close()
	r.mu.Lock()
	for i, o := range r.old {
		if o == b {
			r.old = append(r.old[:i], r.old[i+1:]...)
			break
		}
	}
	r.mu.Unlock()
	if done != nil {
		done()
	}
}

// drained says whether a replaced child may stop now: it holds no
// session, or its grace ended (a zero end: at once).
func drained(sessions int, now, end time.Time) bool {
	return sessions == 0 || !now.Before(end)
}

// Close stops every child of the replica, the current one and those
// draining, at once; idempotent.
func (r *Rolling) Close() {
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		close(r.stop)
	}
	cur := r.cur
	r.mu.Unlock()
	var wg sync.WaitGroup
	wg.Go(cur.Close)
	r.wg.Wait()
	wg.Wait()
}

// sessionCount is how many sessions the child holds now.
func (c *Child) sessionCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sessions)
}

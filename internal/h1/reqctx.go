package h1

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"
)

// reqCtx is the context of a request on the server. It is a part of the
// request's one allocation (exchange), where context.WithCancel cost two
// allocations and a client's context.AfterFunc on it four more: the done
// channel is made only if someone asks for it, and the functions to run at
// its end (onCancel, the h1 client's and contexts derived from it) go in a
// small array. Its one value is the connection's local address, as
// net/http gives it (http.LocalAddrContextKey); it has no parent, so
// nothing finds the server's own cancellation through it
// (context.Cause reads this context's Err), and the server ends it when it
// closes (Server.Close).
type reqCtx struct {
	local net.Addr

	mu    sync.Mutex // guards the fields below
	done  chan struct{}
	err   error
	next  uint64
	hooks []ctxHook
	arr   [2]ctxHook
}

// ctxHook is a function to run when a reqCtx ends.
type ctxHook struct {
	id uint64
	f  func()
}

// closedDone is the done channel of a reqCtx that ended before anyone
// asked for it.
var closedDone = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

var _ context.Context = (*reqCtx)(nil)

func (x *reqCtx) init(local net.Addr) {
	x.local = local
	x.hooks = x.arr[:0]
}

// Deadline reports no deadline: a request's lasts as long as its client.
func (x *reqCtx) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done returns a channel closed when the request's context ends.
func (x *reqCtx) Done() <-chan struct{} {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.done == nil {
		x.done = make(chan struct{})
	}
	return x.done
}

// Err is context.Canceled once the context ended, else nil.
func (x *reqCtx) Err() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.err
}

// Value returns the connection's local address for
// http.LocalAddrContextKey, and nil for any other key.
func (x *reqCtx) Value(key any) any {
	if key == http.LocalAddrContextKey {
		return x.local
	}
	return nil
}

// AfterFunc arranges for f to run once the context ends; the context
// package uses it for the contexts derived from this one, and
// context.AfterFunc on it, instead of a goroutine that waits on Done.
func (x *reqCtx) AfterFunc(f func()) (stop func() bool) {
	id := x.onCancel(f)
	return func() bool { return x.stopOnCancel(id) }
}

// onCancel arranges for f to run once the context ends, at once on a
// goroutine of its own if it has ended, and returns the id that
// stopOnCancel takes.
func (x *reqCtx) onCancel(f func()) uint64 {
	x.mu.Lock()
	if x.err != nil {
		x.mu.Unlock()
		go f()
		return 0
	}
	x.next++
	id := x.next
	x.hooks = append(x.hooks, ctxHook{id: id, f: f})
	x.mu.Unlock()
	return id
}

// stopOnCancel keeps the function onCancel gave id from running, and
// reports whether it did so (false: it has run or is running).
func (x *reqCtx) stopOnCancel(id uint64) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	for i, h := range x.hooks {
		if h.id == id {
			x.hooks = append(x.hooks[:i], x.hooks[i+1:]...)
			return true
		}
	}
	return false
}

// cancel ends the context and runs what waits for its end, as
// context.WithCancel's cancel does with the contexts derived from it.
func (x *reqCtx) cancel() {
	x.mu.Lock()
	if x.err != nil {
		x.mu.Unlock()
		return
	}
	x.err = context.Canceled
	if x.done == nil {
		x.done = closedDone
	} else {
		close(x.done)
	}
	hooks := x.hooks
	x.hooks = nil
	x.mu.Unlock()
	for _, h := range hooks {
		h.f()
	}
}

// cancelWatch is a function waiting for a context's end, h1's own way on
// a reqCtx (no allocation) and context.AfterFunc's on any other.
type cancelWatch struct {
	rc   *reqCtx
	id   uint64
	stop func() bool
}

// watchCancel runs f once ctx ends, until the watch's stop.
func watchCancel(ctx context.Context, f func()) cancelWatch {
	if rc, ok := ctx.(*reqCtx); ok {
		return cancelWatch{rc: rc, id: rc.onCancel(f)}
	}
	return cancelWatch{stop: context.AfterFunc(ctx, f)}
}

// stopWatch keeps f from running, and reports whether it did so.
func (w cancelWatch) stopWatch() bool {
	if w.rc != nil {
		return w.id != 0 && w.rc.stopOnCancel(w.id)
	}
	return w.stop()
}

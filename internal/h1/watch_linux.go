package h1

import (
	"net"
	"sync"
	"syscall"
	"time"
)

// watcher notices clients that close their connection while their request
// is being served: one epoll set for the whole server, waited on by one
// goroutine, instead of a goroutine blocked in a read per request as in
// net/http. A connection joins the set only once its request has run for
// watchAfter and its body has been read.
type watcher struct{ set pollSet }

func newWatcher() *watcher { return &watcher{} }

func (w *watcher) close() { w.set.close() }

// watch is a connection's place in the watcher, reused by each of its
// requests: its timer is made once per connection.
type watch struct {
	mu     sync.Mutex
	timer  *time.Timer
	w      *watcher
	nc     net.Conn
	body   *requestBody
	cancel *reqCtx
	token  uint32
	active bool
	added  bool
}

// begin puts nc under watch once watchAfter has passed and body is read;
// cancel ends if the client goes away before end.
func (wt *watch) begin(w *watcher, nc net.Conn, body *requestBody, cancel *reqCtx) {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	wt.w, wt.nc, wt.body, wt.cancel, wt.active, wt.added = w, nc, body, cancel, true, false
	if wt.timer == nil {
		wt.timer = time.AfterFunc(watchAfter, wt.fire)
	} else {
		wt.timer.Reset(watchAfter)
	}
}

func (wt *watch) fire() {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	if !wt.active || wt.added {
		return
	}
	if !wt.body.readDone() {
		wt.timer.Reset(watchAfter) // its bytes would look like the client talking
		return
	}
	wt.token, wt.added = wt.w.add(wt.nc, wt.cancel.cancel)
}

// end takes the connection out of the watch when its request is done.
func (wt *watch) end() {
	wt.mu.Lock()
	wt.active = false
	added, token := wt.added, wt.token
	wt.added, wt.body, wt.cancel = false, nil, nil
	timer := wt.timer
	wt.mu.Unlock()
	if timer != nil {
		timer.Stop()
	}
	if added {
		wt.w.remove(wt.nc, token)
	}
}

func (w *watcher) add(nc net.Conn, cancel func()) (uint32, bool) {
	return w.set.add(nc, syscall.EPOLLIN|syscall.EPOLLRDHUP, func(events uint32) {
		// Bytes alone are a client sending its next request early; a
		// hang-up or error is a client gone.
		if events&(syscall.EPOLLRDHUP|syscall.EPOLLHUP|syscall.EPOLLERR) != 0 {
			cancel()
		}
	})
}

func (w *watcher) remove(nc net.Conn, token uint32) { w.set.remove(nc, token) }

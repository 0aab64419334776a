package h1

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// watcher notices clients that close their connection while their request
// is being served: one epoll set for the whole server, waited on by one
// goroutine, instead of a goroutine blocked in a read per request as in
// net/http. A connection joins the set only once its request has run for
// watchAfter and its body has been read.
type watcher struct {
	once   sync.Once
	epfd   int
	err    error
	closed atomic.Bool

	mu   sync.Mutex
	next uint32
	subs map[uint32]func()
}

func newWatcher() *watcher { return &watcher{subs: make(map[uint32]func())} }

func (w *watcher) start() {
	w.epfd, w.err = syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if w.err == nil {
		go w.loop()
	}
}

// close ends the watch: the loop notices within its wait's timeout (closing
// the epoll descriptor would not wake a thread blocked on it) and closes it.
func (w *watcher) close() { w.closed.Store(true) }

func (w *watcher) loop() {
	defer syscall.Close(w.epfd)
	events := make([]syscall.EpollEvent, 128)
	for !w.closed.Load() {
		n, err := syscall.EpollWait(w.epfd, events, 500)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return
		}
		for _, ev := range events[:n] {
			// Bytes alone are a client sending its next request early;
			// a hang-up or error is a client gone.
			if ev.Events&(syscall.EPOLLRDHUP|syscall.EPOLLHUP|syscall.EPOLLERR) == 0 {
				continue
			}
			w.mu.Lock()
			cancel := w.subs[uint32(ev.Fd)]
			delete(w.subs, uint32(ev.Fd))
			w.mu.Unlock()
			if cancel != nil {
				cancel()
			}
		}
	}
}

// watch is a connection's place in the watcher, reused by each of its
// requests: its timer is made once per connection.
type watch struct {
	mu     sync.Mutex
	timer  *time.Timer
	w      *watcher
	nc     net.Conn
	body   *requestBody
	cancel func()
	token  uint32
	active bool
	added  bool
}

// begin puts nc under watch once watchAfter has passed and body is read;
// cancel runs if the client goes away before end.
func (wt *watch) begin(w *watcher, nc net.Conn, body *requestBody, cancel func()) {
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
	wt.token, wt.added = wt.w.add(wt.nc, wt.cancel)
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
	w.once.Do(w.start)
	if w.err != nil || w.closed.Load() {
		return 0, false
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return 0, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, false
	}
	w.mu.Lock()
	w.next++
	for _, taken := w.subs[w.next]; taken || w.next == 0; _, taken = w.subs[w.next] {
		w.next++
	}
	token := w.next
	w.subs[token] = cancel
	w.mu.Unlock()
	var cerr error
	err = rc.Control(func(fd uintptr) {
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT, Fd: int32(token)}
		cerr = syscall.EpollCtl(w.epfd, syscall.EPOLL_CTL_ADD, int(fd), &ev)
	})
	if err != nil || cerr != nil {
		w.mu.Lock()
		delete(w.subs, token)
		w.mu.Unlock()
		return 0, false
	}
	return token, true
}

// remove takes nc out of the set. Control holds the descriptor open, so a
// number reused by a newer connection is never removed by mistake.
func (w *watcher) remove(nc net.Conn, token uint32) {
	w.mu.Lock()
	delete(w.subs, token)
	w.mu.Unlock()
	if rc, err := nc.(syscall.Conn).SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) {
			_ = syscall.EpollCtl(w.epfd, syscall.EPOLL_CTL_DEL, int(fd), nil)
		})
	}
}

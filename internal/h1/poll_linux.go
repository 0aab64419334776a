package h1

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
)

// pollSet is an epoll set waited on by one goroutine. A descriptor is in it
// for one event (EPOLLONESHOT), which calls the func it was added with, on
// the set's goroutine: the func must not block.
type pollSet struct {
	once   sync.Once
	epfd   int
	err    error
	closed atomic.Bool

	mu   sync.Mutex
	next uint32
	subs map[uint32]func(events uint32)
}

func (s *pollSet) start() {
	s.subs = make(map[uint32]func(uint32))
	s.epfd, s.err = syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if s.err == nil {
		go s.loop()
	}
}

// close ends the set: the loop notices within its wait's timeout (closing
// the epoll descriptor would not wake a thread blocked on it) and closes it.
func (s *pollSet) close() { s.closed.Store(true) }

func (s *pollSet) loop() {
	defer syscall.Close(s.epfd)
	events := make([]syscall.EpollEvent, 128)
	for !s.closed.Load() {
		n, err := syscall.EpollWait(s.epfd, events, 500)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return
		}
		for _, ev := range events[:n] {
			s.mu.Lock()
			fn := s.subs[uint32(ev.Fd)]
			delete(s.subs, uint32(ev.Fd))
			s.mu.Unlock()
			if fn != nil {
				fn(ev.Events)
			}
		}
	}
}

// add puts nc in the set for one of events; fn runs when it comes. It
// returns the token that remove takes, false when nc cannot be waited on.
func (s *pollSet) add(nc net.Conn, events uint32, fn func(uint32)) (uint32, bool) {
	s.once.Do(s.start)
	if s.err != nil || s.closed.Load() {
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
	s.mu.Lock()
	s.next++
	for _, taken := s.subs[s.next]; taken || s.next == 0; _, taken = s.subs[s.next] {
		s.next++
	}
	token := s.next
	s.subs[token] = fn
	s.mu.Unlock()
	var cerr error
	err = rc.Control(func(fd uintptr) {
		ev := syscall.EpollEvent{Events: events | syscall.EPOLLONESHOT, Fd: int32(token)}
		cerr = syscall.EpollCtl(s.epfd, syscall.EPOLL_CTL_ADD, int(fd), &ev)
	})
	if err != nil || cerr != nil {
		s.mu.Lock()
		delete(s.subs, token)
		s.mu.Unlock()
		return 0, false
	}
	return token, true
}

// remove takes nc out of the set; its func will not run after this, unless
// it already is running. Control holds the descriptor open, so a number
// reused by a newer connection is never removed by mistake.
func (s *pollSet) remove(nc net.Conn, token uint32) {
	s.mu.Lock()
	delete(s.subs, token)
	s.mu.Unlock()
	if rc, err := nc.(syscall.Conn).SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) {
			_ = syscall.EpollCtl(s.epfd, syscall.EPOLL_CTL_DEL, int(fd), nil)
		})
	}
}

// parkSet holds the upstream connections of parked bodies (Body.Park), for
// the whole process.
var parkSet pollSet

func parkAdd(nc net.Conn, fn func(uint32)) (uint32, bool) {
	return parkSet.add(nc, syscall.EPOLLIN|syscall.EPOLLRDHUP, fn)
}

func parkRemove(nc net.Conn, token uint32) { parkSet.remove(nc, token) }

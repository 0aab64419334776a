package h1

import (
	"errors"
	"net"
	"syscall"
)

// peeker tells whether an idle kept-alive connection may still carry a
// request: the replica has not closed it and sent nothing unasked. It peeks
// without blocking, one system call. Made once per connection, so that a
// peek allocates nothing.
type peeker struct {
	rc  syscall.RawConn       // nil: the descriptor could not be had, never alive
	fn  func(fd uintptr) bool // peek, as a func made once
	rfn func(fd uintptr) bool // readable, likewise
	ok  bool
	buf [1]byte
}

// newPeeker returns c's peeker; nil for a connection without a descriptor,
// which is taken as alive.
func newPeeker(c net.Conn) *peeker {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	p := &peeker{}
	if rc, err := sc.SyscallConn(); err == nil {
		p.rc = rc
	}
	p.fn, p.rfn = p.peek, p.readable
	return p
}

func (p *peeker) peek(fd uintptr) bool {
	_, _, err := syscall.Recvfrom(int(fd), p.buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	// Anything but "nothing to read yet" is a connection to drop: closed
	// (a read of 0), unasked bytes, or an error.
	p.ok = errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR)
	return true
}

func (p *peeker) alive() bool {
	if p == nil {
		return true
	}
	if p.rc == nil {
		return false
	}
	p.ok = false
	err := p.rc.Read(p.fn)
	return p.ok && err == nil
}

// wait blocks until the connection has bytes to read (or is closed, or
// fails), reading none: the peek tells, and between peeks the runtime's
// poller waits. A connection that cannot be waited on returns at once.
func (p *peeker) wait() error {
	if p == nil || p.rc == nil {
		return nil
	}
	return p.rc.Read(p.rfn)
}

// readable is wait's test; anything but "nothing yet" ends the wait, and
// the read that follows tells what it was.
func (p *peeker) readable(fd uintptr) bool {
	_, _, err := syscall.Recvfrom(int(fd), p.buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return !errors.Is(err, syscall.EAGAIN)
}

// alive reports whether the idle connection c may still carry a request.
func alive(c net.Conn) bool { return newPeeker(c).alive() }

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
	rc  syscall.RawConn // nil: the descriptor could not be had, never alive
	fn  func(fd uintptr) bool
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
	p.fn = p.peek
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

// alive reports whether the idle connection c may still carry a request.
func alive(c net.Conn) bool { return newPeeker(c).alive() }

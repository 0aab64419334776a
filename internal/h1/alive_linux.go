package h1

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
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
	sfn func(fd uintptr) bool // sendStep, likewise
	ok  bool
	buf [1]byte

	// send's state, for sendStep
	out    []byte
	check  bool // peek before writing
	sent   int
	result sendResult
	idle   *atomic.Int32 // if not nil, set to stateIdle once the whole of a send is written
}

// senders are peekers without a connection of their own, lent to a server
// connection for one send (getSender): a connection that waits for its
// next request for hours then holds only its RawConn.
var senders = sync.Pool{New: func() any {
	p := &peeker{}
	p.fn, p.rfn, p.sfn = p.peek, p.readable, p.sendStep
	return p
}}

// getSender lends a peeker that sends on rc and, once a send is written
// whole, sets *idle to stateIdle; putSender takes it back.
func getSender(rc syscall.RawConn, idle *atomic.Int32) *peeker {
	p := senders.Get().(*peeker)
	p.rc, p.idle = rc, idle
	return p
}

func putSender(p *peeker) {
	p.rc, p.idle = nil, nil
	senders.Put(p)
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
	p.fn, p.rfn, p.sfn = p.peek, p.readable, p.sendStep
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

// send writes b, a whole request, and waits until the connection can be
// read, in one pass through the runtime's poller. It peeks first: with
// check, as alive does, writing nothing to a connection the replica has
// closed; without, not waiting when bytes are already there. A plain write followed by a read tries the read before it waits,
// which finds nothing (EAGAIN) when the replica has not answered yet, as it
// nearly never has: a system call a request for nothing. The write is made
// inside the poller's read wait, after the wait has forgotten any earlier
// readiness and before it begins, so that no readiness of the answer can
// be missed. An error is the wait's (the connection closed by a cancel).
func (p *peeker) send(b []byte, check bool) (n int, res sendResult, err error) {
	if p == nil || p.rc == nil {
		return 0, sendUnable, nil
	}
	// Nothing written until sendStep says otherwise: a connection closed
	// before the callback runs (a cancel) is a send that wrote nothing.
	p.out, p.check, p.sent, p.result = b, check, 0, sendPartial
	err = p.rc.Read(p.sfn)
	n, res = p.sent, p.result
	p.out = nil
	return n, res, err
}

func (p *peeker) sendStep(fd uintptr) bool {
	if p.out == nil {
		return true // woken after the write: readable, or failed
	}
	// Bytes that came before this pass (the client's next request, say)
	// made their readiness known before the wait began, which forgot it:
	// the peek is what sees them, and then the wait is skipped.
	_, _, err := syscall.Recvfrom(int(fd), p.buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	pending := !errors.Is(err, syscall.EAGAIN)
	if pending && p.check {
		p.result = sendGone
		return true
	}
	n, err := syscall.Write(int(fd), p.out)
	if n > 0 {
		p.sent = n
	}
	if err != nil || n < len(p.out) {
		p.result = sendPartial
		return true
	}
	p.out, p.result = nil, sendWaited
	if p.idle != nil {
		p.idle.Store(stateIdle)
	}
	return pending // wait for the answer, unless bytes are there already
}

package h1

import (
	"errors"
	"net"
	"syscall"
)

// alive reports whether an idle kept-alive connection may still carry a
// request: the replica has not closed it and sent nothing unasked. It peeks
// without blocking, one system call.
func alive(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	ok = true
	var buf [1]byte
	err = rc.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EINTR):
		default:
			ok = false // closed (n == 0), unasked bytes (n > 0), or an error
			_ = n
		}
		return true
	})
	return ok && err == nil
}

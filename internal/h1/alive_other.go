//go:build !linux

package h1

import (
	"net"
	"sync/atomic"
	"syscall"
)

// peeker cannot peek here; a closed connection shows when it is used.
type peeker struct{}

func newPeeker(net.Conn) *peeker { return nil }

func (*peeker) alive() bool { return true }

// wait cannot wait here without reading: the next read waits instead.
func (*peeker) wait() error { return nil }

func alive(net.Conn) bool { return true }

// send cannot write and wait in one pass here: the caller writes and reads.
func (*peeker) send([]byte, bool) (int, sendResult, error) { return 0, sendUnable, nil }

// A body cannot park here: its reader waits in a read.
func parkAdd(net.Conn, func(uint32)) (uint32, bool) { return 0, false }

func parkRemove(net.Conn, uint32) {}

func getSender(syscall.RawConn, *atomic.Int32) *peeker { return nil }

func putSender(*peeker) {}

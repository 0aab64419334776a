package testproc

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// FlakyProxy is a loopback TCP proxy to an address that can be cut and
// restored, standing in for a store or a network that goes away and comes
// back. It closes with the test.
type FlakyProxy struct {
	ln   net.Listener
	up   atomic.Bool
	mu   sync.Mutex
	conn []net.Conn
}

// NewFlakyProxy proxies a fresh loopback port to addr.
func NewFlakyProxy(t testing.TB, addr string) *FlakyProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &FlakyProxy{ln: ln}
	p.up.Store(true)
	t.Cleanup(func() { ln.Close(); p.Cut() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if !p.up.Load() {
				c.Close()
				continue
			}
			s, err := net.Dial("tcp", addr)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conn = append(p.conn, c, s)
			p.mu.Unlock()
			go func() { io.Copy(s, c); s.Close() }()
			go func() { io.Copy(c, s); c.Close() }()
		}
	}()
	return p
}

// Addr is the proxy's own address, to give in place of the real one.
func (p *FlakyProxy) Addr() string { return p.ln.Addr().String() }

// Cut refuses new connections and closes the open ones.
func (p *FlakyProxy) Cut() {
	p.up.Store(false)
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conn {
		c.Close()
	}
	p.conn = nil
}

// Restore lets new connections through again.
func (p *FlakyProxy) Restore() { p.up.Store(true) }

package gateway

import (
	"context"
	"net"
	"net/url"
	"sync"

	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// A replica that stops answering without closing anything (its host gone
// from the network, a partition that drops its packets, a process stopped
// with SIGSTOP) leaves the calls it holds waiting on connections that no
// byte and no close will ever end: the gateway would relay them until the
// client's own timeout. Its health checks fail meanwhile, and once they
// take it down the gateway ends every connection it holds to it. The
// relays then read the end as they read a killed replica's, and answer
// their calls with the replica_lost error ("A replica lost mid-call").

// connSet keeps the connections the forwarders hold to each replica
// address, so that those of a replica gone down can be ended.
type connSet struct {
	mu     sync.Mutex // guards byAddr
	byAddr map[string]map[*trackedConn]struct{}
}

func newConnSet() *connSet {
	return &connSet{byAddr: make(map[string]map[*trackedConn]struct{})}
}

// dialFunc is the dial of net.Dialer.DialContext.
type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// wrap returns dial, keeping each TCP connection it makes in s until it is
// closed.
func (s *connSet) wrap(dial dialFunc) dialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		tc, ok := c.(*net.TCPConn)
		if err != nil || !ok {
			return c, err
		}
		t := &trackedConn{TCPConn: tc, set: s, addr: addr}
		s.mu.Lock()
		m := s.byAddr[addr]
		if m == nil {
			m = make(map[*trackedConn]struct{})
			s.byAddr[addr] = m
		}
		m[t] = struct{}{}
		s.mu.Unlock()
		return t, nil
	}
}

// end shuts down both directions of every connection open to addr and
// returns how many it ended. It does not close them: their owners do, as
// after any failed read, so that a descriptor the forwarders still watch
// (a parked body) is never closed under them. The connections leave the
// set then.
func (s *connSet) end(addr string) int {
	s.mu.Lock()
	conns := make([]*trackedConn, 0, len(s.byAddr[addr]))
	for c := range s.byAddr[addr] {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		_ = c.CloseRead() // first, so that no byte the replica sends after it is read
		_ = c.CloseWrite()
	}
	return len(conns)
}

func (s *connSet) remove(c *trackedConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.byAddr[c.addr]; m != nil {
		delete(m, c)
		if len(m) == 0 {
			delete(s.byAddr, c.addr)
		}
	}
}

// trackedConn is a TCP connection in a connSet. Embedding the
// *net.TCPConn keeps its methods (SyscallConn, CloseWrite) for the code
// that looks for them.
type trackedConn struct {
	*net.TCPConn
	set  *connSet
	addr string
}

// Close closes the connection and takes it out of its set.
func (c *trackedConn) Close() error {
	c.set.remove(c)
	return c.TCPConn.Close()
}

// dialAddr is the address the forwarders dial for u: its host and port,
// the scheme's default port when it names none.
func dialAddr(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	port := "80"
	if u.Scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// HealthChanged is the health checker's OnChange (upstream.CheckOptions):
// it counts the change, and when a replica goes down it ends the
// connections the gateway holds to it, at its MCP and its SSE endpoint,
// so that the calls waiting on them are answered now.
func (g *Gateway) HealthChanged(replica string, from, to upstream.State) {
	g.metrics.HealthChanged(replica, from, to)
	if to != upstream.StateDown || from == upstream.StateDown {
		return
	}
	rep := g.fleet.Snapshot().Lookup(replica)
	if rep == nil {
		return
	}
	addr := dialAddr(rep.URL())
	n := g.conns.end(addr)
	if sse := rep.SSEURL(); sse != nil && dialAddr(sse) != addr {
		n += g.conns.end(dialAddr(sse))
	}
	if n > 0 {
		g.log.Warn("replica down: ended the connections to it", "replica", replica, "connections", n)
	}
}

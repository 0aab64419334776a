package gateway

import (
	"context"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// A replica that stops answering without closing anything (its host gone
// from the network, a partition that drops its packets, a process stopped
// with SIGSTOP) leaves the calls it holds waiting on connections that no
// byte and no close will ever end: the gateway would relay them until the
// client's own timeout. Its health checks fail meanwhile, and once they
// take it down (unannounced: not after draining) the gateway ends every
// connection to it that has read nothing for a health-check interval
// (every one, with no interval). The
// relays then read the end as they read a killed replica's, and answer
// their calls with the replica_lost error ("A replica lost mid-call").
// While it stays down, requests may still reach it (when no replica is
// eligible they go to one anyway): every health-check interval, the
// connections to it that have read nothing for that long are ended too.

// connSet keeps the connections the forwarders hold to each replica
// address, so that those of a replica gone down can be ended.
type connSet struct {
	mu     sync.Mutex // guards byAddr and sweeping
	byAddr map[string]map[*trackedConn]struct{}
	// sweeping names the replicas a sweep (sweepDown) watches.
	sweeping map[string]bool
}

func newConnSet() *connSet {
	return &connSet{byAddr: make(map[string]map[*trackedConn]struct{}), sweeping: make(map[string]bool)}
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
		t.lastRead.Store(time.Now().UnixNano())
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

// end shuts down both directions of every connection open to addr that
// has read nothing since quiet (every one, for the zero time) and returns
// how many it ended. It does not close them: their owners do, as after
// any failed read, so that a descriptor the forwarders still watch (a
// parked body) is never closed under them. The connections leave the set
// then.
func (s *connSet) end(addr string, quiet time.Time) int {
	s.mu.Lock()
	conns := make([]*trackedConn, 0, len(s.byAddr[addr]))
	for c := range s.byAddr[addr] {
		if quiet.IsZero() || c.lastRead.Load() < quiet.UnixNano() {
			conns = append(conns, c)
		}
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
	set      *connSet
	addr     string
	lastRead atomic.Int64 // when it last read a byte (or was dialled), Unix nanoseconds
}

// Read reads, noting when a byte came.
func (c *trackedConn) Read(p []byte) (int, error) {
	n, err := c.TCPConn.Read(p)
	if n > 0 {
		c.lastRead.Store(time.Now().UnixNano())
	}
	return n, err
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
// that read nothing for an interval, so that the calls waiting on them are
// answered now; then, while it stays down, it does the same every
// interval.
func (g *Gateway) HealthChanged(replica string, from, to upstream.State) {
	g.metrics.HealthChanged(replica, from, to)
	// A replica that said it was draining before it went down stopped
	// taking connections, not answering: it finishes the calls it holds
	// within its own grace (a rolling deploy), and ending them would
	// answer as lost calls that then run to their end, and are sent
	// again by their clients. Only a replica gone down unannounced (a
	// partition, a hang) loses its silent connections.
	if to != upstream.StateDown || from == upstream.StateDown || from == upstream.StateDraining {
		return
	}
	// A connection that read a byte within the last interval (a call's
	// progress, a stream's keep-alive) is a replica that still answers
	// though its checks fail: its calls go on. The sweep below ends it
	// once it falls silent for as long.
	every := g.opts.HealthCheckInterval
	quiet := time.Time{}
	if every > 0 {
		quiet = time.Now().Add(-every)
	}
	if n := g.endConns(replica, quiet); n > 0 {
		g.log.Warn("replica down: ended the connections to it that read nothing for a health-check interval", "replica", replica, "connections", n)
	}
	if every > 0 {
		g.conns.mu.Lock()
		start := !g.conns.sweeping[replica]
		g.conns.sweeping[replica] = true
		g.conns.mu.Unlock()
		if start {
			go g.sweepDown(replica, every)
		}
	}
}

// endConns ends the connections to replica's endpoints that have read
// nothing since quiet (all of them for the zero time); it returns how
// many.
func (g *Gateway) endConns(replica string, quiet time.Time) int {
	rep := g.fleet.Snapshot().Lookup(replica)
	if rep == nil {
		return 0
	}
	addr := dialAddr(rep.URL())
	n := g.conns.end(addr, quiet)
	if sse := rep.SSEURL(); sse != nil && dialAddr(sse) != addr {
		n += g.conns.end(dialAddr(sse), quiet)
	}
	return n
}

// sweepDown ends, every interval while replica is down, the connections
// to it that read nothing for an interval: those of requests that went to
// it since, when no replica was eligible.
func (g *Gateway) sweepDown(replica string, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-g.base.Done():
			g.stopSweep(replica, true)
			return
		case now := <-t.C:
			if g.stopSweep(replica, false) {
				return
			}
			if n := g.endConns(replica, now.Add(-every)); n > 0 {
				g.log.Warn("replica down: ended the connections to it that read nothing", "replica", replica, "connections", n)
			}
		}
	}
}

// stopSweep ends replica's sweep when force is set or the replica is no
// longer down, and reports whether it did. It reads the state under the
// lock HealthChanged takes after the state changed, so that a replica
// going down again either finds the sweep still on or starts another.
func (g *Gateway) stopSweep(replica string, force bool) bool {
	g.conns.mu.Lock()
	defer g.conns.mu.Unlock()
	rep := g.fleet.Snapshot().Lookup(replica)
	if !force && rep != nil && rep.State() == upstream.StateDown {
		return false
	}
	delete(g.conns.sweeping, replica)
	return true
}

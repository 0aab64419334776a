package chaos

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testserver"
)

// replica is one testserver "process": a testserver.Server serving on its
// own listener, stopped by SIGTERM (cancel Serve's context) or SIGKILL (cut
// the listener and every connection), and restarted on the same address
// with fresh memory and the same ledger.
type replica struct {
	name   string
	addr   string // host:port, fixed across restarts
	ledger *testserver.Ledger
	drain  time.Duration // Serve's drain delay; 0 in kill mode
	grace  time.Duration // testserver ShutdownGrace
	log    *slog.Logger

	mu     sync.Mutex // guards the fields below
	ln     *killableListener
	cancel context.CancelFunc
	done   chan error // Serve's result; buffered
}

// start serves a fresh testserver.Server on r.addr ("127.0.0.1:0" the
// first time, which fixes the address).
func (r *replica) start() error {
	srv, err := testserver.New(r.name, &testserver.Options{
		Era:           testserver.EraBoth,
		ShutdownGrace: r.grace,
		Ledger:        r.ledger,
		Logger:        r.log,
	})
	if err != nil {
		return err
	}
	inner, err := listenRetry(r.addr)
	if err != nil {
		return fmt.Errorf("starting %s: %w", r.name, err)
	}
	ln := &killableListener{Listener: inner, closed: make(chan struct{}), conns: make(map[net.Conn]struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	r.mu.Lock()
	r.addr, r.ln, r.cancel, r.done = inner.Addr().String(), ln, cancel, done
	r.mu.Unlock()
	go func() { done <- srv.Serve(ctx, ln, r.drain) }()
	return nil
}

// stop stops the replica, by SIGKILL if hard, else by SIGTERM, and returns
// once Serve has returned. It reports whether calls were cut: Serve's error
// says the grace ran out with calls left (or serving failed); a hard kill
// cuts by definition.
func (r *replica) stop(hard bool) (cut bool, err error) {
	r.mu.Lock()
	ln, cancel, done := r.ln, r.cancel, r.done
	r.ln = nil
	r.mu.Unlock()
	if ln == nil {
		return false, nil
	}
	if hard {
		ln.kill()
	}
	cancel()
	err = <-done
	return hard || err != nil, err
}

// url returns the replica's MCP endpoint.
func (r *replica) url() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return "http://" + r.addr + "/mcp"
}

// listenRetry listens on addr, retrying for a while: a port just closed may
// take a moment to free.
func listenRetry(addr string) (net.Listener, error) {
	var err error
	for range 100 {
		var ln net.Listener
		if ln, err = net.Listen("tcp", addr); err == nil {
			return ln, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil, fmt.Errorf("listening on %s: %w", addr, err)
}

// killableListener is a net.Listener whose kill closes the socket and every
// connection accepted so far at once, like SIGKILL does to a process. After
// kill its Accept blocks until Close, so that http.Server.Serve does not
// return early and testserver.Serve still runs its shutdown, which ends the
// handlers left running (a killed process runs nothing more).
type killableListener struct {
	net.Listener
	closeOnce sync.Once
	closed    chan struct{} // closed by Close

	mu     sync.Mutex // guards killed and conns
	killed bool
	conns  map[net.Conn]struct{}
}

// Accept returns the next connection, tracked for kill.
func (l *killableListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		l.mu.Lock()
		killed := l.killed
		l.mu.Unlock()
		if killed {
			<-l.closed
			return nil, net.ErrClosed
		}
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.killed {
		_ = c.Close() // accepted in the instant of the kill: it dies with the rest
		return nil, net.ErrClosed
	}
	l.conns[c] = struct{}{}
	return &trackedConn{Conn: c, l: l}, nil
}

// Close closes the listener; it is idempotent.
func (l *killableListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	if err := l.Listener.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

// kill closes the socket and every connection now.
func (l *killableListener) kill() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.killed = true
	_ = l.Listener.Close() // refuse new connections at once
	for c := range l.conns {
		_ = c.Close() // a reset is the point
	}
	clear(l.conns)
}

// trackedConn forgets itself in its listener when closed.
type trackedConn struct {
	net.Conn
	l *killableListener
}

// Close closes the connection and forgets it.
func (c *trackedConn) Close() error {
	c.l.mu.Lock()
	delete(c.l.conns, c.Conn)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

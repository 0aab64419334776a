package testserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Serve serves s on ln until ctx is done, then drains and returns.
//
// Draining has three steps. First /health answers 503 {"status":"draining"}
// while /mcp still serves for drainDelay, so balancers stop sending new work.
// Then Serve stops accepting connections and gives calls in flight up to the
// shutdown grace ([Options.ShutdownGrace]) to finish; when it runs out,
// calls waiting for a slot never start, and the calls still running are
// ended and counted ([Server.Killed]). Last it closes the MCP sessions,
// which ends open GET streams, and returns.
//
// Serve returns nil after a graceful drain; an error if serving failed, or if
// the grace ran out and calls were cut off. Call Serve at most once: a server
// whose grace ran out fails every later call.
func (s *Server) Serve(ctx context.Context, ln net.Listener, drainDelay time.Duration) error {
	var fresh idleNew
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ConnState:         fresh.track,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	s.logger.Info("test server serving", "name", s.name, "era", s.era, "addr", ln.Addr().String())

	select {
	case err := <-served:
		return fmt.Errorf("serving %s: %w", s.name, err)
	case <-ctx.Done():
	}
	s.SetDraining()
	s.logger.Info("test server draining", "name", s.name, "delay", drainDelay)
	delay := time.NewTimer(drainDelay)
	defer delay.Stop()
	select {
	case err := <-served:
		return fmt.Errorf("serving %s while draining: %w", s.name, err)
	case <-delay.C:
	}
	err := s.shutdown(srv, &fresh, served)
	s.logger.Info("test server stopped", "name", s.name, "killed", s.Killed())
	return err
}

// shutdown stops srv, giving calls in flight up to the grace to finish, and
// waits for srv.Serve, whose result arrives on served, to return.
//
// http.Server.Shutdown alone would wait while a legacy client holds its
// standalone GET stream open, or a client holds a connection it has not used
// yet, so once no call is in flight shutdown closes the MCP sessions and the
// unused connections in fresh.
func (s *Server) shutdown(srv *http.Server, fresh *idleNew, served <-chan error) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.grace)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- srv.Shutdown(ctx) }()

	s.inflight.wait(ctx)
	if ctx.Err() != nil {
		// The grace ran out: no call starts any more, and the calls left
		// are ended; those running now are the ones killed.
		s.killed.Store(int64(s.slots.close()))
		s.stop()
	}
	// Closing a session waits for its calls, so they must be over first.
	for ss := range s.mcp.Sessions() {
		_ = ss.Close() // the peer may be gone already; nothing to do about it
	}
	fresh.closeAll()
	err := <-stopped
	if err != nil {
		_ = srv.Close() // cut the connections left
		err = fmt.Errorf("shutting down %s: %w", s.name, err)
	}
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, fmt.Errorf("serving %s: %w", s.name, serr))
	}
	return err
}

// ServeStdio serves the MCP server on in and out, one JSON-RPC message a
// line (MCP 2025-11-25, "Transports", stdio), until in ends or ctx does:
// the server as a stdio child of the gateway sees it.
func (s *Server) ServeStdio(ctx context.Context, in io.ReadCloser, out io.WriteCloser) error {
	err := s.mcp.Run(ctx, &mcp.IOTransport{Reader: in, Writer: out})
	if errors.Is(err, io.EOF) || ctx.Err() != nil {
		return nil
	}
	return err
}

package h1

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Server serves HTTP/1.1 (and 1.0) to an http.Handler, as net/http's Server
// does, with what a proxy holding many streams needs and nothing else: no
// TLS, no HTTP/2, no content sniffing, no hijacking.
//
// What it saves: a connection holds no buffer while its handler waits or
// streams (the read buffer goes back to a pool once the request is read,
// the write buffer once it is flushed); a response is written with one
// system call when it fits; and a client that goes away is noticed by one
// epoll set for the whole server (Linux) instead of a goroutine blocked in
// a read per request. A request that lasts longer than watchAfter is put
// under that watch; its context is cancelled when the client closes.
type Server struct {
	Handler           http.Handler
	ReadHeaderTimeout time.Duration // to read a request's head; 0: none
	IdleTimeout       time.Duration // between requests on a connection; 0: none
	MaxHeaderBytes    int           // request line and fields; 0: 1 MiB
	Log               *slog.Logger  // handler panics and refused connections; nil: discard

	initOnce  sync.Once
	base      context.Context
	cancel    context.CancelFunc
	watch     *watcher
	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[*serverConn]struct{}
	shutdown  atomic.Bool
	onStop    []func()
}

// watchAfter is how long a request runs before its connection is watched
// for the client going away. Shorter requests are over before a closed
// connection could matter; longer ones (a silent tool, a stream) get
// cancelled when their client leaves.
const watchAfter = 20 * time.Millisecond

const defaultMaxHeaderBytes = 1 << 20

func (s *Server) init() {
	s.initOnce.Do(func() {
		s.base, s.cancel = context.WithCancel(context.Background())
		s.listeners = make(map[net.Listener]struct{})
		s.conns = make(map[*serverConn]struct{})
		if s.Log == nil {
			s.Log = slog.New(slog.DiscardHandler)
		}
		s.watch = newWatcher()
	})
}

// Serve accepts connections on ln and serves each in its own goroutine. It
// returns http.ErrServerClosed after Shutdown or Close.
func (s *Server) Serve(ln net.Listener) error {
	s.init()
	s.mu.Lock()
	if s.shutdown.Load() {
		s.mu.Unlock()
		ln.Close()
		return http.ErrServerClosed
	}
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
	}()
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.shutdown.Load() {
				return http.ErrServerClosed
			}
			if temporary(err) {
				// Out of file descriptors, say: wait, as net/http does,
				// instead of giving up on the listener.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.Log.Warn("accept failed; retrying", "error", err, "delay", backoff)
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		c := &serverConn{s: s, nc: nc, accepted: time.Now()}
		s.mu.Lock()
		if s.shutdown.Load() {
			s.mu.Unlock()
			nc.Close()
			return http.ErrServerClosed
		}
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		go c.serve()
	}
}

func temporary(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ENOMEM)
}

// Shutdown stops accepting, closes idle connections, and waits until every
// request in flight has been answered or ctx ends. Request contexts are not
// cancelled: a stream that should end must be ended by its handler.
func (s *Server) Shutdown(ctx context.Context) error {
	s.init()
	s.stopListening()
	s.mu.Lock()
	for _, f := range s.onStop {
		go f()
	}
	s.mu.Unlock()
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		if s.closeIdle() {
			s.watch.close()
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// RegisterOnShutdown registers f to be called, in its own goroutine, when
// Shutdown has closed the listeners, as net/http's Server does: work that
// ends streams belongs there, once no new request can come in to take
// their place.
func (s *Server) RegisterOnShutdown(f func()) {
	s.init()
	s.mu.Lock()
	s.onStop = append(s.onStop, f)
	s.mu.Unlock()
}

// Close stops accepting, closes every connection and cancels every
// request's context.
func (s *Server) Close() error {
	s.init()
	s.stopListening()
	// The connections close before the requests' contexts end, so that a
	// handler that returns on its cancel finds its connection gone and no
	// answer goes out after Close.
	s.mu.Lock()
	for c := range s.conns {
		c.nc.Close()
	}
	s.mu.Unlock()
	s.cancel()
	s.mu.Lock()
	for c := range s.conns {
		c.cancelCurrent()
	}
	s.mu.Unlock()
	s.watch.close()
	return nil
}

func (s *Server) stopListening() {
	s.mu.Lock()
	s.shutdown.Store(true)
	for ln := range s.listeners {
		ln.Close()
	}
	s.mu.Unlock()
}

// closeIdle closes connections that wait for a request and reports whether
// none is left.
func (s *Server) closeIdle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		switch c.state.Load() {
		case stateIdle:
			c.nc.Close()
		case stateNew:
			if time.Since(c.accepted) > newConnGrace {
				c.nc.Close()
			}
		}
	}
	return len(s.conns) == 0
}

const (
	stateNew    int32 = iota // accepted, no request yet
	stateIdle                // between requests
	stateActive              // reading a request or running its handler
)

// newConnGrace is how long Shutdown lets a connection that has not sent its
// first request yet live: its client may be sending one (as net/http).
const newConnGrace = 5 * time.Second

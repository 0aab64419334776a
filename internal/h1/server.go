package h1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
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

type serverConn struct {
	s        *Server
	nc       net.Conn
	accepted time.Time
	state    atomic.Int32
	br       *bufio.Reader // nil while no request is being read
	ctx      context.Context
	remote   string
	served   int             // requests so far
	out      *[]byte         // the last bytes of the answer before, not yet written (sendOut)
	rc       syscall.RawConn // nc's, for sendOut; nil until the first, or if nc has none
	watch    watch
	linger   bool // the client may still be sending a body nobody reads
	// deadline: a read deadline may be in force (set by setReadDeadline
	// or the handler through the response; atomic, as a handler's timer
	// may set it from its own goroutine).
	deadline atomic.Bool
}

// lingerClose ends a connection whose client may still be sending: it
// sends FIN and reads on for a while, so that the client reads the answer
// before anything resets the connection (as net/http does).
func (c *serverConn) lingerClose() {
	if cw, ok := c.nc.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_ = c.nc.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	var r io.Reader = c.nc
	if c.br != nil {
		r = c.br
	}
	_, _ = io.CopyN(io.Discard, r, 16<<20)
}

var readBufs = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readBufSize) }}

func (c *serverConn) serve() {
	c.remote = c.nc.RemoteAddr().String()
	c.ctx = context.WithValue(c.s.base, http.LocalAddrContextKey, c.nc.LocalAddr())
	c.loop()
}

// loop serves requests until the connection ends, or until a handler
// detaches its response (Detach): the connection is then the detached
// response's until it is done, which runs loop again on a new goroutine.
func (c *serverConn) loop() {
	detached := false
	defer func() {
		if !detached {
			c.end()
		}
	}()
	maxHead := c.s.MaxHeaderBytes
	if maxHead <= 0 {
		maxHead = defaultMaxHeaderBytes
	}
	for {
		if !c.awaitRequest() {
			return
		}
		head, err := ReadRequestHead(c.br, maxHead)
		if err != nil {
			var re *RequestError
			if errors.As(err, &re) {
				c.refuse(re)
			}
			return
		}
		if c.deadline.Load() && !c.restBuffered(head) {
			c.setReadDeadline(time.Time{})
		}
		w := c.serveOne(head)
		if w.detach.Load() != 0 && w.detach.Add(-1) != 0 {
			detached = true // the rest is the detached response's
			return
		}
		if !c.after(w) || c.s.shutdown.Load() {
			return
		}
		c.served++
	}
}

// end closes the connection and forgets it.
func (c *serverConn) end() {
	c.flushOut()
	if c.linger {
		c.lingerClose()
	}
	c.nc.Close()
	c.dropReadBuf()
	c.s.mu.Lock()
	delete(c.s.conns, c)
	c.s.mu.Unlock()
}

// awaitRequest waits for the first byte of the next request, under the
// idle timeout (the header timeout for the first request, as in net/http),
// then puts the rest of the head under the header timeout.
func (c *serverConn) awaitRequest() bool {
	if c.served > 0 && c.out == nil {
		c.state.Store(stateIdle)
	}
	if c.s.shutdown.Load() && c.served > 0 {
		return false // end sends what the last answer still holds
	}
	var deadline time.Time
	switch {
	case c.served > 0 && c.s.IdleTimeout > 0:
		deadline = time.Now().Add(c.s.IdleTimeout)
	case c.s.ReadHeaderTimeout > 0:
		deadline = time.Now().Add(c.s.ReadHeaderTimeout)
	}
	if !deadline.IsZero() || c.deadline.Load() {
		c.setReadDeadline(deadline)
	}
	if c.out != nil {
		// A request already buffered (pipelined) is not waited for.
		if c.br != nil && c.br.Buffered() > 0 {
			if !c.flushOut() {
				return false
			}
		} else if !c.sendOut() {
			return false
		}
	}
	if c.br == nil {
		c.br = readBufs.Get().(*bufio.Reader)
		c.br.Reset(c.nc)
	}
	if _, err := c.br.Peek(1); err != nil {
		return false
	}
	c.state.Store(stateActive)
	if c.served > 0 && c.deadline.Load() && !headBuffered(c.br) {
		// The rest of the head is under the header timeout, if any. A
		// head already in the buffer is read without the socket: the idle
		// deadline stays until loop lifts it (or leaves it, see
		// restBuffered).
		var d time.Time
		if c.s.ReadHeaderTimeout > 0 {
			d = time.Now().Add(c.s.ReadHeaderTimeout)
		}
		c.setReadDeadline(d)
	}
	return true
}

// sendOut writes the last bytes of the answer before, held by finish, and
// waits for the next request in the same pass through the poller (see
// peeker.send): a write followed by a read tries the read first, which
// nearly always finds nothing yet (EAGAIN), a system call a request for
// nothing. The connection is idle from the moment its answer is out
// (the sender sets its state), so that Shutdown closes it then, and not
// before.
func (c *serverConn) sendOut() bool {
	b := c.out
	c.out = nil
	defer putBuf(b)
	if c.rc == nil {
		if sc, ok := c.nc.(syscall.Conn); ok {
			c.rc, _ = sc.SyscallConn()
		}
	}
	n, res := 0, sendUnable
	if c.rc != nil {
		p := getSender(c.rc, &c.state)
		n, res, _ = p.send(*b, false)
		putSender(p)
	}
	if res == sendWaited {
		return true // a failed wait: the read that follows tells
	}
	if _, err := c.nc.Write((*b)[n:]); err != nil {
		c.reset()
		return false
	}
	c.state.Store(stateIdle)
	return true
}

// flushOut writes what the last answer still holds, if anything, and
// reports whether the connection may go on.
func (c *serverConn) flushOut() bool {
	if c.out == nil {
		return true
	}
	_, err := c.nc.Write(*c.out)
	putBuf(c.out)
	c.out = nil
	if err != nil {
		c.reset()
		return false
	}
	return true
}

// setReadDeadline sets the connection's read deadline and notes whether
// one is in force.
func (c *serverConn) setReadDeadline(t time.Time) {
	c.deadline.Store(!t.IsZero())
	_ = c.nc.SetReadDeadline(t)
}

// headBuffered reports whether the buffer holds the end of a request head
// (an empty line), so that reading the head reads nothing from the socket.
func headBuffered(br *bufio.Reader) bool {
	b, _ := br.Peek(br.Buffered())
	return bytes.Contains(b, []byte("\n\r\n")) || bytes.Contains(b, []byte("\n\n"))
}

// restBuffered reports whether the buffer holds all of the request's body
// after its head: the request then reads nothing more from the socket
// until the next awaitRequest sets a deadline of its own, and the deadline
// in force (idle or header) may stay rather than be lifted and set again,
// a change of the socket's timer each. A body still on its way is read
// without it: the handler bounds that read (the gateway's
// body_read_timeout), and an idle deadline that came due in the middle of
// it would cut it.
func (c *serverConn) restBuffered(h *RequestHead) bool {
	return !h.Chunked && !h.Continue && h.Length <= int64(c.br.Buffered())
}

// refuse answers a request the server cannot read, and the connection ends
// gently (lingerClose): the client may still be sending the rest of it, and
// a close with its bytes unread would reset the connection before the
// client reads why (as net/http does).
func (c *serverConn) refuse(e *RequestError) {
	c.linger = true
	body := e.Reason + "\n"
	b := make([]byte, 0, 160)
	b = append(b, "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(e.Status), 10)
	b = append(b, ' ')
	b = append(b, http.StatusText(e.Status)...)
	b = append(b, "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, "\r\n\r\n"...)
	b = append(b, body...)
	_ = c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, _ = c.nc.Write(b)
}

// serveOne runs the handler for one request; after then ends it.
func (c *serverConn) serveOne(head *RequestHead) *response {
	u, err := url.ParseRequestURI(head.Target)
	if err != nil {
		c.refuse(&RequestError{Status: http.StatusBadRequest, Reason: "bad request target"})
		return &response{c: c, refused: true}
	}
	ctx, cancel := context.WithCancel(c.ctx)
	req := &http.Request{
		Method:     head.Method,
		URL:        u,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: head.Minor,
		Header:     head.Header,
		Body:       http.NoBody,
		Close:      head.Close,
		Host:       head.Host,
		RemoteAddr: c.remote,
		RequestURI: head.Target,
	}
	if head.Minor == 0 {
		req.Proto = "HTTP/1.0"
	}
	if u.Host != "" {
		// RFC 9112 section 3.2.2: an absolute-form target's authority is
		// the host, whatever the Host field says.
		req.Host = u.Host
	}
	body := &requestBody{c: c, left: head.Length, expect: head.Continue}
	switch {
	case head.Chunked:
		body.chunked = &chunkedReader{br: c.br}
		req.Body, req.ContentLength, req.TransferEncoding = body, -1, []string{"chunked"}
	case head.Length > 0:
		req.Body, req.ContentLength = body, head.Length
	default:
		body.done = true
		c.releaseReadBuf()
	}
	req = req.WithContext(ctx)
	w := &response{c: c, req: req, body: body, header: make(http.Header, 8), length: -1, head: head.Method == http.MethodHead, cancel: cancel}
	c.watch.begin(c.s.watch, c.nc, body, cancel)
	w.completed = c.run(w, req)
	return w
}

// after ends the exchange once the handler has returned (or its detached
// response is done) and reports whether the connection may carry another.
func (c *serverConn) after(w *response) (keep bool) {
	if w.refused {
		return false
	}
	defer w.cancel()
	c.watch.end()
	body := w.body
	body.mu.Lock()
	body.closed = true
	body.mu.Unlock()
	if w.completed {
		w.finish()
	}
	keep = w.completed && w.err == nil && !w.closeAfter && !w.req.Close
	if !body.done {
		// The client may still be sending: skip what is left if little,
		// else close gently (lingerClose). It may wait for its answer
		// first.
		c.flushOut()
		keep = c.finishBody(body) && keep
	}
	if keep {
		c.releaseReadBuf()
	}
	return keep
}

// Detach lets a handler return before its response is over: the response
// stays open, its request's context lives on, and the connection serves
// nothing else until done is called, from any goroutine, once the
// response is complete. Meanwhile no goroutine of the server waits for
// it: a stream that is silent for hours can wait for its next bytes in a
// poll set instead of in a goroutine parked on its way (Body.Park). The
// response may be written until done, and not after; done must be called
// exactly once. Detach reports false for a response this server did not
// make, or one already detached.
func Detach(w http.ResponseWriter) (done func(), ok bool) {
	for {
		switch x := w.(type) {
		case *response:
			if !x.detach.CompareAndSwap(0, 2) {
				return nil, false
			}
			return x.detached, true
		case interface{ Unwrap() http.ResponseWriter }:
			w = x.Unwrap()
		default:
			return nil, false
		}
	}
}

// detached is a detached response's done: the last of it and of its
// handler's return ends the exchange, and goes on to the connection's
// next request (or its end) on a new goroutine if the handler came first.
func (w *response) detached() {
	if w.detach.Add(-1) != 0 {
		return // the handler has not returned: its loop goes on
	}
	c := w.c
	if !c.after(w) || c.s.shutdown.Load() {
		c.end()
		return
	}
	c.served++
	go c.loop()
}

// releaseReadBuf gives the read buffer back to the pool once the request
// is read, unless it holds bytes of the next one: a connection whose
// handler streams, or that waits for its next request, holds no buffer.
func (c *serverConn) releaseReadBuf() {
	if c.br != nil && c.br.Buffered() == 0 {
		c.dropReadBuf()
	}
}

// dropReadBuf gives the read buffer back to the pool, whatever it holds.
func (c *serverConn) dropReadBuf() {
	if c.br != nil {
		c.br.Reset(nil)
		readBufs.Put(c.br)
		c.br = nil
	}
}

// run calls the handler; a panic is logged and ends the connection (for
// http.ErrAbortHandler silently), as in net/http.
func (c *serverConn) run(w *response, req *http.Request) (completed bool) {
	defer func() {
		if p := recover(); p != nil {
			if p != http.ErrAbortHandler {
				buf := make([]byte, 16<<10)
				buf = buf[:runtime.Stack(buf, false)]
				c.s.Log.Error("handler panicked", "remote", c.remote, "panic", fmt.Sprint(p), "stack", string(buf))
			}
			completed = false
		}
	}()
	c.s.Handler.ServeHTTP(w, req)
	return true
}

// finishBody reads what the handler left of the request body, if that is
// little and here soon, so that the connection can go on.
func (c *serverConn) finishBody(b *requestBody) bool {
	if b.done {
		return b.err == nil
	}
	if b.expect && !b.continued {
		return false // the client may never send it
	}
	if b.chunked != nil || b.left > maxSkipBytes || c.br == nil || b.err != nil {
		c.linger = true
		return false
	}
	c.setReadDeadline(time.Now().Add(time.Second))
	_, err := c.br.Discard(int(b.left))
	c.setReadDeadline(time.Time{})
	c.linger = err != nil
	return err == nil
}

// requestBody is a request's body, read from the connection's buffer.
type requestBody struct {
	c         *serverConn
	left      int64
	chunked   *chunkedReader
	expect    bool // Expect: 100-continue
	continued bool // 100 Continue sent
	err       error

	mu     sync.Mutex
	done   bool // read to its end (or there was none)
	closed bool // the handler returned
	late   bool // the answer's head went out: no 100 Continue any more
}

// headSent notes that the answer's head went out.
func (b *requestBody) headSent() {
	b.mu.Lock()
	b.late = true
	b.mu.Unlock()
}

var errBodyAfterHandler = errors.New("h1: request body read after the handler returned")

func (b *requestBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	closed, done, late := b.closed, b.done, b.late
	b.mu.Unlock()
	if closed {
		return 0, errBodyAfterHandler
	}
	if done {
		return 0, io.EOF
	}
	if b.err != nil {
		return 0, b.err
	}
	if b.expect && !b.continued && !late {
		b.continued = true
		if _, err := b.c.nc.Write([]byte("HTTP/1.1 100 Continue\r\n\r\n")); err != nil {
			b.err = err
			return 0, err
		}
	}
	var n int
	var err error
	if b.chunked != nil {
		n, err = b.chunked.Read(p)
	} else {
		n, err = readLength(b.c.br, p, &b.left)
	}
	if errors.Is(err, io.EOF) {
		b.mu.Lock()
		b.done = true
		b.mu.Unlock()
		b.c.releaseReadBuf()
		return n, io.EOF
	}
	if err != nil {
		b.err = err
	}
	return n, err
}

func (b *requestBody) Close() error { return nil }

// abandoned reports, when the answer's head goes out, whether the body's
// rest cannot be skipped after the handler returns (too long, chunked, or
// never asked for with 100-continue): the answer then says Connection:
// close, so that the client does not send its next request on a connection
// about to close.
func (b *requestBody) abandoned() bool {
	b.mu.Lock()
	done := b.done
	b.mu.Unlock()
	return !done && (b.chunked != nil || b.left > maxSkipBytes || (b.expect && !b.continued))
}

// maxSkipBytes is the most of an unread body the server reads past after
// its handler returns, to keep the connection.
const maxSkipBytes = 256 << 10

// readDone reports whether the body has been read to its end.
func (b *requestBody) readDone() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.done
}

// response is the http.ResponseWriter. A body written before the first
// Flush waits (up to a buffer's worth) so that a short answer goes out with
// its Content-Length in one write; after that, or on Flush, the head goes
// out and the body follows chunked unless the handler set a length.
type response struct {
	c          *serverConn
	req        *http.Request
	body       *requestBody
	header     http.Header
	status     int
	committed  bool
	chunked    bool
	head       bool  // a HEAD request: no body is sent
	length     int64 // declared Content-Length, or -1
	written    int64
	headBytes  int64   // body bytes a HEAD handler wrote (not sent)
	pending    *[]byte // body written before the head went out
	wbuf       *[]byte // bytes for the wire, not yet written
	closeAfter bool
	err        error

	cancel    context.CancelFunc // the request's context
	completed bool               // the handler returned (did not panic)
	refused   bool               // no handler ran: the head was refused
	detach    atomic.Int32       // Detach: 2, less one for each of the handler's return and done
}

// bufs holds the byte buffers of requests and answers on their way out,
// client and server alike; getBuf's buffer is empty.
var bufs = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

func getBuf() *[]byte { return bufs.Get().(*[]byte) }

// putBuf returns b to the pool, emptied; one grown past 64 KiB is let go.
func putBuf(b *[]byte) {
	if cap(*b) > 64<<10 {
		return
	}
	*b = (*b)[:0]
	bufs.Put(b)
}

func (w *response) Header() http.Header { return w.header }

func (w *response) WriteHeader(code int) {
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	if w.status != 0 || code < 200 {
		// Interim (1xx) answers are not sent: the gateway has none.
		return
	}
	w.status = code
}

func (w *response) bodyAllowed() bool {
	return !w.head && w.status != http.StatusNoContent && w.status != http.StatusNotModified
}

func (w *response) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.err != nil {
		return 0, w.err
	}
	if !w.bodyAllowed() {
		if w.head {
			w.headBytes += int64(len(p)) // what a GET would have sent
			return len(p), nil
		}
		return 0, http.ErrBodyNotAllowed
	}
	if !w.committed {
		if _, declared := w.header["Content-Length"]; declared {
			// The length is known: nothing to wait for, and writes
			// past it are refused as they come.
			w.commit(false)
			return w.writeBody(p)
		}
		if w.pending == nil {
			w.pending = getBuf()
		}
		if len(*w.pending)+len(p) <= cap(*w.pending) {
			*w.pending = append(*w.pending, p...)
			return len(p), nil
		}
		w.commit(false)
	}
	return w.writeBody(p)
}

// writeBody frames p into the write buffer, sending it when it is full.
func (w *response) writeBody(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if w.length >= 0 && w.written+int64(len(p)) > w.length {
		return 0, http.ErrContentLength
	}
	if w.wbuf == nil {
		w.wbuf = getBuf()
	}
	b := *w.wbuf
	if w.chunked {
		b = strconv.AppendInt(b, int64(len(p)), 16)
		b = append(b, '\r', '\n')
	}
	b = append(b, p...)
	if w.chunked {
		b = append(b, '\r', '\n')
	}
	*w.wbuf = b
	w.written += int64(len(p))
	if len(b) >= 4<<10 {
		if err := w.flushWire(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Flush sends the head and everything written so far.
func (w *response) Flush() { _ = w.FlushError() }

// FlushError is Flush, with the write's error (http.ResponseController).
func (w *response) FlushError() error {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !w.committed {
		w.commit(false)
	}
	return w.flushWire()
}

// SetWriteDeadline and SetReadDeadline are for http.ResponseController.
func (w *response) SetWriteDeadline(t time.Time) error { return w.c.nc.SetWriteDeadline(t) }
func (w *response) SetReadDeadline(t time.Time) error {
	w.c.deadline.Store(true) // even for a zero t: the next awaitRequest sets its own
	return w.c.nc.SetReadDeadline(t)
}

func (w *response) flushWire() error {
	if w.err != nil {
		return w.err
	}
	if w.wbuf == nil {
		return nil
	}
	_, err := w.c.nc.Write(*w.wbuf)
	putBuf(w.wbuf)
	w.wbuf = nil
	if err != nil {
		w.err = err
		w.c.reset()
	}
	return err
}

// reset ends a connection at once, after a write on it failed: nothing more
// can go out on it, and a write that timed out is a client that stopped
// reading, whose unsent bytes a graceful close would keep queued (with the
// descriptor's kernel buffers) behind a window that never opens. SO_LINGER
// 0 makes the close a reset, which frees them now; the handler may go on
// (reading a replica's stream to its end, say) without holding the client.
func (c *serverConn) reset() {
	if tc, ok := c.nc.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.nc.Close()
}

// commit puts the head in the write buffer, and the pending body after it.
// final says the handler has returned, so a pending body is all of it.
func (w *response) commit(final bool) {
	w.committed = true
	h := w.header
	allowed := w.bodyAllowed() || w.head
	declared := int64(-1)
	if cl := h["Content-Length"]; len(cl) > 0 {
		if n, err := parseLength(cl); err == nil {
			declared = n
		} else {
			delete(h, "Content-Length")
		}
	}
	var pending []byte
	if w.pending != nil {
		pending = *w.pending
	}
	switch {
	case !allowed:
		delete(h, "Content-Length")
	case declared >= 0:
		w.length = declared
	case w.head:
		// HEAD: the length a GET would have had, when the handler wrote
		// it all; otherwise none (RFC 9110 section 8.6). Never chunked.
		if final && w.headBytes > 0 {
			w.length = w.headBytes
		}
	case final:
		w.length = int64(len(pending))
	case w.req.ProtoMinor == 0:
		w.closeAfter = true // HTTP/1.0: the body runs to the close
	default:
		w.chunked = true
	}
	w.body.headSent()
	if hasCloseToken(h["Connection"]) || w.req.Close || w.c.s.shutdown.Load() || w.body.abandoned() {
		w.closeAfter = true
	}
	if w.wbuf == nil {
		w.wbuf = getBuf()
	}
	b := *w.wbuf
	b = append(b, "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(w.status), 10)
	b = append(b, ' ')
	b = append(b, http.StatusText(w.status)...)
	b = append(b, '\r', '\n')
	for k, vv := range h {
		switch k {
		case "Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive":
			continue
		}
		for _, v := range vv {
			b = AppendField(b, k, v)
		}
	}
	if _, ok := h["Date"]; !ok {
		b = append(b, "Date: "...)
		b = append(b, httpDate()...)
		b = append(b, '\r', '\n')
	}
	switch {
	case w.chunked:
		b = append(b, "Transfer-Encoding: chunked\r\n"...)
	case w.length >= 0 && allowed:
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, w.length, 10)
		b = append(b, '\r', '\n')
	}
	if w.closeAfter {
		b = append(b, "Connection: close\r\n"...)
	} else if w.req.ProtoMinor == 0 {
		b = append(b, "Connection: keep-alive\r\n"...)
	}
	b = append(b, '\r', '\n')
	*w.wbuf = b
	if w.pending != nil {
		if !w.head {
			_, _ = w.writeBody(pending)
		}
		putBuf(w.pending)
		w.pending = nil
	}
}

func hasCloseToken(values []string) bool {
	for _, v := range values {
		if hasToken(v, "close") {
			return true
		}
	}
	return false
}

// finish ends the response after the handler returned.
func (w *response) finish() {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !w.committed {
		w.commit(true)
	}
	if w.chunked && w.err == nil {
		if w.wbuf == nil {
			w.wbuf = getBuf()
		}
		*w.wbuf = append(*w.wbuf, "0\r\n\r\n"...)
	}
	if w.err == nil && w.wbuf != nil {
		// The last bytes go out with the wait for the next request
		// (awaitRequest), or before the connection ends (end).
		w.c.out, w.wbuf = w.wbuf, nil
	}
	if w.length >= 0 && w.written < w.length && w.bodyAllowed() && !w.head {
		w.closeAfter = true // the client waits for bytes that never come
	}
}

// httpDate is the Date field's value, formatted once a second.
func httpDate() string {
	now := time.Now()
	sec := now.Unix()
	if d := cachedDate.Load(); d != nil && d.sec == sec {
		return d.s
	}
	d := &dateString{sec: sec, s: now.UTC().Format(http.TimeFormat)}
	cachedDate.Store(d)
	return d.s
}

type dateString struct {
	sec int64
	s   string
}

var cachedDate atomic.Pointer[dateString]

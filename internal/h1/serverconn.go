package h1

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

type serverConn struct {
	s        *Server
	nc       net.Conn
	accepted time.Time
	state    atomic.Int32
	br       *bufio.Reader // nil while no request is being read
	local    net.Addr      // the connection's local address, a value of its requests' contexts
	cmu      sync.Mutex    // guards cur
	cur      *reqCtx       // the context of the request being served
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
	c.local = c.nc.LocalAddr()
	c.loop()
}

// begin makes x's context the connection's current one, ended at once if
// the server has closed.
func (c *serverConn) begin(x *reqCtx) {
	x.init(c.local)
	c.cmu.Lock()
	c.cur = x
	c.cmu.Unlock()
	if c.s.base.Err() != nil {
		x.cancel()
	}
}

// cancelCurrent ends the context of the request being served, if any: the
// server closes.
func (c *serverConn) cancelCurrent() {
	c.cmu.Lock()
	x := c.cur
	c.cmu.Unlock()
	if x != nil {
		x.cancel()
	}
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
		var head RequestHead
		x := &exchange{}
		room := x.fields.room()
		if err := readRequestHeadInto(c.br, maxHead, &head, &room); err != nil {
			var re *RequestError
			if errors.As(err, &re) {
				c.refuse(re)
			}
			return
		}
		if c.deadline.Load() && !c.restBuffered(&head) {
			c.setReadDeadline(time.Time{})
		}
		w := c.serveOne(x, &head)
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

// exchange is what one request holds on the server side, in one
// allocation: the request, its answer, its body, its target and its field
// values.
type exchange struct {
	req    http.Request
	w      response
	body   requestBody
	url    url.URL
	ctx    reqCtx
	fields requestFields
}

// serveOne runs the handler for the request of x, whose head is read;
// after then ends it.
func (c *serverConn) serveOne(x *exchange, head *RequestHead) *response {
	if !parseTarget(head.Target, &x.url) {
		c.refuse(&RequestError{Status: http.StatusBadRequest, Reason: "bad request target"})
		x.w = response{c: c, refused: true}
		return &x.w
	}
	c.begin(&x.ctx)
	base := http.Request{
		Method:     head.Method,
		URL:        &x.url,
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
		base.Proto = "HTTP/1.0"
	}
	if x.url.Host != "" {
		// RFC 9112 section 3.2.2: an absolute-form target's authority is
		// the host, whatever the Host field says.
		base.Host = x.url.Host
	}
	body := &x.body
	*body = requestBody{c: c, left: head.Length, expect: head.Continue}
	switch {
	case head.Chunked:
		body.chunked = &chunkedReader{br: c.br}
		base.Body, base.ContentLength, base.TransferEncoding = body, -1, []string{"chunked"}
	case head.Length > 0:
		base.Body, base.ContentLength = body, head.Length
	default:
		body.done = true
		c.releaseReadBuf()
	}
	// WithContext is inlined and its copy read at once: it stays on the
	// stack, and the request lives in the exchange.
	x.req = *base.WithContext(&x.ctx)
	req := &x.req
	w := &x.w
	*w = response{c: c, req: req, body: body, length: -1, head: head.Method == http.MethodHead, ctx: &x.ctx}
	c.watch.begin(c.s.watch, c.nc, body, &x.ctx)
	w.completed = c.run(w, req)
	return w
}

// parseTarget reads a request target into u as url.ParseRequestURI
// would, and reports whether it could. An origin-form path of only
// unreserved characters and slashes, as nearly every request has, is
// taken as it is; anything else goes through url.ParseRequestURI.
func parseTarget(target string, u *url.URL) bool {
	if plainPath(target) {
		*u = url.URL{Path: target}
		return true
	}
	p, err := url.ParseRequestURI(target)
	if err != nil {
		return false
	}
	*u = *p
	return true
}

// plainPath reports whether target is "/" followed by unreserved
// characters (RFC 3986 section 2.3) and slashes only: a path that
// url.ParseRequestURI takes as it is, with no RawPath, query or fragment.
func plainPath(target string) bool {
	if len(target) == 0 || target[0] != '/' || strings.HasPrefix(target, "//") {
		return false
	}
	for i := 1; i < len(target); i++ {
		c := target[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '/', c == '-', c == '.', c == '_', c == '~':
		default:
			return false
		}
	}
	return true
}

// after ends the exchange once the handler has returned (or its detached
// response is done) and reports whether the connection may carry another.
func (c *serverConn) after(w *response) (keep bool) {
	if w.refused {
		return false
	}
	defer w.ctx.cancel()
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

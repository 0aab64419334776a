package h1

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Request is what Do sends. Fields holds the header lines after Host, each
// "Name: value\r\n" (see AppendField); it must not hold Host,
// Content-Length, Transfer-Encoding or Connection, which Do writes itself.
type Request struct {
	Method string
	Target string // request-target, such as /mcp
	Host   string
	Fields []byte
	Body   []byte
	// HasBody sends Content-Length even when Body is empty (a POST with an
	// empty body says so; a GET says nothing).
	HasBody bool
	// Close sends the request on a new connection with "Connection: close"
	// (RFC 9112 section 9.6), closes the idle connections to its address
	// first, and never pools the connection afterwards: for a peer that is
	// about to close its connections, so that no request is written on one
	// it is closing.
	Close bool
}

// AppendField appends "name: value\r\n" to b. A value with a control
// character is left out: it cannot be sent as it is, and a field the
// gateway cannot send faithfully is better missing than rewritten.
func AppendField(b []byte, name, value string) []byte {
	if !validValue(value) || !validName(name) {
		return b
	}
	b = append(b, name...)
	b = append(b, ':', ' ')
	b = append(b, value...)
	return append(b, '\r', '\n')
}

// Pool keeps kept-alive connections per address and sends requests over
// them. The zero value is not usable; use NewPool.
type Pool struct {
	dial        func(ctx context.Context, network, addr string) (net.Conn, error)
	maxIdle     int
	maxConns    int
	idleTimeout time.Duration

	mu     sync.Mutex
	idle   map[string][]*conn
	closed bool
	// With maxConns: the connections open per address, and a channel
	// closed when one of them frees (closed or pooled) while requests wait.
	open  map[string]int
	freed map[string]chan struct{}
}

// NewPool returns a pool that dials with dial, keeps at most maxIdle idle
// connections per address, and closes those idle longer than idleTimeout.
func NewPool(dial func(ctx context.Context, network, addr string) (net.Conn, error), maxIdle int, idleTimeout time.Duration) *Pool {
	return &Pool{dial: dial, maxIdle: maxIdle, idleTimeout: idleTimeout, idle: make(map[string][]*conn),
		open: make(map[string]int), freed: make(map[string]chan struct{})}
}

// SetMaxConns bounds the connections open to each address, idle ones
// included; 0 (the default) means no bound. Past it a request waits for a
// connection to come back or close, or for its context to end. Call it
// before the first Do.
func (p *Pool) SetMaxConns(n int) { p.maxConns = max(0, n) }

type conn struct {
	nc        net.Conn
	br        *bufio.Reader
	peek      *peeker
	addr      string
	idleSince time.Time
	p         *Pool
	closed    atomic.Bool
	// cancelled: the context of the exchange on it ended, and abort closed
	// it. A connection so closed is never pooled again, so the flag is of
	// its one exchange.
	cancelled atomic.Bool
	abort     func() // made once: sets cancelled and closes the connection

	pmu    sync.Mutex
	parked *parking // a parked body's wake-up (Body.Park)
}

// newConn returns a connection to addr of p's, not yet dialled.
func newConn(addr string, p *Pool) *conn {
	c := &conn{addr: addr, p: p}
	c.abort = func() {
		c.cancelled.Store(true)
		c.close()
	}
	return c
}

// parking is a parked body's place in the poll set and what wakes it.
type parking struct {
	token uint32
	ready func()
}

// park puts c in the poll set, ready to run when it has bytes, fails or is
// closed. False: c cannot be waited on so (closed, or no descriptor).
func (c *conn) park(ready func()) bool {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	if c.closed.Load() {
		return false
	}
	token, ok := parkAdd(c.nc, func(uint32) { c.unpark() })
	if !ok {
		return false
	}
	c.parked = &parking{token: token, ready: ready}
	return true
}

// unpark wakes the body parked on c, if one is: once, whether the poll set
// or a close comes first.
func (c *conn) unpark() {
	c.pmu.Lock()
	p := c.parked
	c.parked = nil
	c.pmu.Unlock()
	if p != nil {
		parkRemove(c.nc, p.token)
		p.ready()
	}
}

// close closes the connection once, and frees its place under maxConns.
func (c *conn) close() {
	if c.closed.Swap(true) {
		return
	}
	c.unpark()
	c.nc.Close()
	if p := c.p; p.maxConns > 0 {
		p.mu.Lock()
		p.open[c.addr]--
		if p.open[c.addr] <= 0 {
			delete(p.open, c.addr)
		}
		p.signalLocked(c.addr)
		p.mu.Unlock()
	}
}

// signalLocked wakes the requests waiting for a connection to addr.
func (p *Pool) signalLocked(addr string) {
	if ch, ok := p.freed[addr]; ok {
		close(ch)
		delete(p.freed, addr)
	}
}

// clientBufSize is the read buffer of an upstream connection: large enough
// for a typical head and JSON answer in one read, small enough that
// thousands of idle streams stay cheap (a longer head line is put together
// on the heap; a large body is read past the buffer, straight into the
// caller's).
const clientBufSize = 2 << 10

// readBufSize is the server's read buffer, held only while a request is read.
const readBufSize = 4 << 10

// inlineBody is the largest body copied into the head's buffer, so that
// head and body leave in one write; larger ones follow in a second write.
const inlineBody = 16 << 10

// Do sends req to addr (host:port) and reads the response head. The
// response's Body must be closed; read to its end, it gives the connection
// back to the pool. ctx ending cancels the exchange, the body's reads
// included, by closing the connection.
//
// delivered is false only when no byte of the request was written: the
// dial failed, or the first write did not take a single byte, or ctx ended
// before. Any later failure counts as delivered, even when the request may
// never have been read: when in doubt, a request is never sent twice. A
// kept-alive connection the replica has closed is noticed before it is
// used (on Linux), which keeps that doubt rare.
func (p *Pool) Do(ctx context.Context, addr string, req *Request) (resp *http.Response, delivered bool, err error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	bp := getBuf()
	b := appendHead(*bp, req)
	body := req.Body
	if len(body) <= inlineBody {
		b = append(b, body...)
		body = nil
	}
	if req.Close {
		p.CloseIdleTo(addr)
	}
	for {
		// A kept-alive connection is checked as the request goes out
		// (exchange), unless the body goes in a write of its own.
		c, reused, err := p.get(ctx, addr, len(body) > 0, req.Close)
		if err != nil {
			*bp = b
			putBuf(bp)
			return nil, false, err
		}
		resp, delivered, err := p.exchange(ctx, c, reused, !req.Close, b, body)
		if errors.Is(err, errConnGone) {
			continue // nothing was written: another connection
		}
		*bp = b
		putBuf(bp)
		return resp, delivered, err
	}
}

// sendResult is what send did.
type sendResult int

const (
	// sendWaited: the request was written whole and the answer's first
	// bytes can be read (or the connection failed: the read tells).
	sendWaited sendResult = iota
	// sendGone: the check found the connection closed by the replica, or
	// holding bytes nobody asked for; nothing was written.
	sendGone
	// sendPartial: the socket took only the first n bytes (n may be 0);
	// the caller writes the rest and reads as usual.
	sendPartial
	// sendUnable: the connection has no descriptor to send on this way.
	sendUnable
)

// errConnGone is exchange's word for a kept-alive connection found closed
// (or holding unasked bytes) before anything was written on it.
var errConnGone = errors.New("h1: kept-alive connection closed by its peer")

// answer is what one exchange holds on the client side, in one
// allocation: the response, its body and its field values.
type answer struct {
	resp   http.Response
	body   Body
	fields answerFields
}

// exchange sends head (with as much of the body as fits) and body on c,
// and reads the response's head. With reused, c is first checked as get
// would check it; without keep, c is closed once the answer is read.
func (p *Pool) exchange(ctx context.Context, c *conn, reused, keep bool, head, body []byte) (resp *http.Response, delivered bool, err error) {
	x := &answer{}
	cw := watchCancel(ctx, c.abort)
	fail := func(err error) error {
		cw.stopWatch()
		c.close()
		if c.cancelled.Load() {
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
		}
		return err
	}

	// The whole request in one write, and the wait for its answer in the
	// same pass through the poller (peeker.send); else a write, and the
	// read waits.
	n, res := 0, sendUnable
	if len(body) == 0 {
		n, res, err = c.peek.send(head, reused)
	}
	switch res {
	case sendGone:
		fail(nil)
		return nil, false, errConnGone
	case sendWaited:
		if err != nil {
			return nil, true, fail(err)
		}
	case sendPartial, sendUnable:
		if res == sendUnable && reused && len(body) == 0 && !c.peek.alive() {
			fail(nil)
			return nil, false, errConnGone
		}
		m, err := c.nc.Write(head[n:])
		if err != nil {
			return nil, n+m > 0, fail(err)
		}
		if len(body) > 0 {
			if _, err := c.nc.Write(body); err != nil {
				return nil, true, fail(err)
			}
		}
	}
	var h Head
	room := x.fields.room()
	if err := readHeadInto(c.br, &h, &room); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, true, fail(err)
	}
	bd := &x.body
	*bd = Body{p: p, c: c, watch: cw, cancelled: &c.cancelled, reuse: keep && !h.Close}
	switch h.Framing {
	case NoBody:
		bd.eof = true
	case Length:
		bd.left = h.Length
		bd.eof = h.Length == 0
	case Chunked:
		bd.chunked = &chunkedReader{br: c.br}
	case UntilClose:
		bd.untilClose = true
	}
	resp = &x.resp
	*resp = http.Response{
		Status:        statusText(h.Status),
		StatusCode:    h.Status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h.Header,
		Body:          bd,
		ContentLength: -1,
		Close:         h.Close,
	}
	if h.Framing == Length {
		resp.ContentLength = h.Length
	} else if h.Framing == NoBody {
		resp.ContentLength = 0
	}
	if bd.eof {
		bd.release(true)
	}
	return resp, true, nil
}

// statusText is a response's Status as net/http's client gives it ("200
// OK"), without building the string for the codes replicas answer with.
func statusText(code int) string {
	switch code {
	case http.StatusOK:
		return "200 OK"
	case http.StatusAccepted:
		return "202 Accepted"
	case http.StatusNoContent:
		return "204 No Content"
	case http.StatusBadRequest:
		return "400 Bad Request"
	case http.StatusNotFound:
		return "404 Not Found"
	}
	return strconv.Itoa(code) + " " + http.StatusText(code)
}

// appendHead writes the request line and header section.
func appendHead(b []byte, req *Request) []byte {
	b = append(b, req.Method...)
	b = append(b, ' ')
	b = append(b, req.Target...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, req.Host...)
	b = append(b, '\r', '\n')
	b = append(b, req.Fields...)
	if req.Close {
		b = append(b, "Connection: close\r\n"...)
	}
	if req.HasBody || len(req.Body) > 0 {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, int64(len(req.Body)), 10)
		b = append(b, '\r', '\n')
	}
	return append(b, '\r', '\n')
}

// get returns an idle connection to addr that still looks alive, or (or
// with fresh) a new one; under maxConns, it waits for one while addr has as
// many open.
func (p *Pool) get(ctx context.Context, addr string, check, fresh bool) (c *conn, reused bool, err error) {
	now := time.Now()
	for {
		p.mu.Lock()
		list := p.idle[addr]
		if len(list) > 0 {
			c := list[len(list)-1]
			list[len(list)-1] = nil
			p.idle[addr] = list[:len(list)-1]
			p.mu.Unlock()
			if !fresh && now.Sub(c.idleSince) < p.idleTimeout && c.br.Buffered() == 0 && (!check || c.peek.alive()) {
				return c, true, nil
			}
			c.close()
			continue
		}
		if p.maxConns == 0 {
			p.mu.Unlock()
			break
		}
		if p.open[addr] < p.maxConns {
			p.open[addr]++
			p.mu.Unlock()
			break
		}
		ch, ok := p.freed[addr]
		if !ok {
			ch = make(chan struct{})
			p.freed[addr] = ch
		}
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
	c = newConn(addr, p)
	nc, err := p.dial(ctx, "tcp", addr)
	if err != nil {
		c.closed.Store(true)
		if p.maxConns > 0 {
			p.mu.Lock()
			p.open[addr]--
			p.signalLocked(addr)
			p.mu.Unlock()
		}
		return nil, false, err
	}
	c.br = clientReaders.Get().(*bufio.Reader)
	c.br.Reset(nc)
	c.nc, c.peek = nc, newPeeker(nc)
	return c, false, nil
}

// put gives a connection whose last response was read to its end back to
// the pool, or closes it.
func (p *Pool) put(c *conn) {
	c.idleSince = time.Now()
	p.mu.Lock()
	list := p.idle[c.addr]
	if p.closed || len(list) >= p.maxIdle {
		p.mu.Unlock()
		c.close()
		return
	}
	// The oldest connection sits at the bottom; close it once it has been
	// idle too long, so that a pool that shrank does not keep it forever.
	var stale *conn
	if len(list) > 0 && c.idleSince.Sub(list[0].idleSince) > p.idleTimeout {
		stale = list[0]
		list = append(list[:0], list[1:]...)
	}
	p.idle[c.addr] = append(list, c)
	if p.maxConns > 0 {
		p.signalLocked(c.addr)
	}
	p.mu.Unlock()
	if stale != nil {
		stale.close()
	}
}

// CloseIdleTo closes the idle connections to addr.
func (p *Pool) CloseIdleTo(addr string) {
	p.mu.Lock()
	list := p.idle[addr]
	delete(p.idle, addr)
	p.mu.Unlock()
	for _, c := range list {
		c.close()
	}
}

// CloseIdle closes every idle connection; with final, the pool keeps none
// from now on.
func (p *Pool) CloseIdle(final bool) {
	p.mu.Lock()
	idle := p.idle
	p.idle = make(map[string][]*conn)
	p.closed = p.closed || final
	p.mu.Unlock()
	for _, list := range idle {
		for _, c := range list {
			c.close()
		}
	}
}

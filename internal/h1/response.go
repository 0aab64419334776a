package h1

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

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

	ctx       *reqCtx      // the request's context
	completed bool         // the handler returned (did not panic)
	refused   bool         // no handler ran: the head was refused
	detach    atomic.Int32 // Detach: 2, less one for each of the handler's return and done
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

// Header returns the response's header, made when first asked for.
func (w *response) Header() http.Header {
	if w.header == nil {
		w.header = make(http.Header, 8)
	}
	return w.header
}

// AdoptHeader makes h the response's header and reports whether it did,
// which it does only if nobody has asked for the header yet (Header): a
// proxy relaying a replica's answer hands over the answer's header map
// instead of copying it into a new one. h is the response's from then on,
// and it is changed through Header only. It is for a caller that knows
// the ResponseWriter is this package's (an interface it declares).
func (w *response) AdoptHeader(h http.Header) bool {
	if w.header != nil || w.committed || h == nil {
		return false
	}
	w.header = h
	return true
}

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

package h1

import (
	"bufio"
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
)

// Body is a response body. Read it to io.EOF and Close it, and its
// connection carries the next request; Close it early, and the connection
// is closed, which a replica sees as the end of the exchange.
type Body struct {
	p          *Pool
	c          *conn
	watch      cancelWatch // the exchange's context
	cancelled  *atomic.Bool
	left       int64 // with Content-Length
	chunked    *chunkedReader
	untilClose bool
	reuse      bool
	eof        bool
	err        error
	done       atomic.Bool // released: the connection is pooled or closed
}

// errBodyClosed is what a body closed before its end reads as.
var errBodyClosed = errors.New("h1: read on a closed response body")

func (b *Body) Read(p []byte) (int, error) {
	if b.eof {
		return 0, io.EOF
	}
	if b.done.Load() {
		return 0, errBodyClosed
	}
	if b.err != nil {
		return 0, b.err
	}
	b.unparked()
	var n int
	var err error
	switch {
	case b.chunked != nil:
		n, err = b.chunked.Read(p)
	case b.untilClose:
		n, err = b.c.br.Read(p)
	default:
		n, err = readLength(b.c.br, p, &b.left)
	}
	if errors.Is(err, io.EOF) {
		b.eof = true
		b.release(true)
		return n, io.EOF
	}
	if err != nil {
		if b.cancelled.Load() {
			err = context.Canceled
		}
		b.err = err
	}
	return n, err
}

// WaitReadable waits until the connection has bytes for the body, holding
// no read buffer meanwhile: an idle stream's connection (a standalone SSE
// stream that says nothing for hours) then costs no buffer while it
// waits. It returns at once when bytes are buffered or the body is over,
// and the error a Read would give when the connection fails or the
// exchange is cancelled meanwhile. Where the connection cannot be waited
// on this way, it returns nil and the next Read waits as usual. It must
// not be called concurrently with Read.
func (b *Body) WaitReadable() error {
	if b.done.Load() {
		return nil
	}
	b.unparked()
	if b.chunked != nil {
		// The CRLF that ends the last chunk's data is framing, not bytes
		// for the body: read past it, or it would look like the next.
		b.chunked.skipBufferedEnd()
		if b.chunked.err != nil {
			return nil // the next Read tells
		}
	}
	if b.eof || b.done.Load() || b.err != nil || b.c.br.Buffered() > 0 {
		return nil
	}
	c := b.c
	clientReaders.Put(c.br)
	c.br = nil
	err := c.peek.wait()
	b.unparked()
	if err != nil {
		if b.cancelled.Load() {
			err = context.Canceled
		}
		b.err = err
	}
	return err
}

// Park is WaitReadable without the wait: it arranges for ready to be
// called once, from another goroutine, when the connection has bytes for
// the body, fails, or is closed (Close, the exchange cancelled), and
// returns; meanwhile the body holds no read buffer and no goroutine waits
// for it. ready must not block. Park reports false, and calls nothing, when
// there is no need or no way to wait so: bytes are buffered, the body is
// over or failed, or the connection cannot be waited on (not Linux); the
// caller reads on. It must not be called concurrently with Read.
func (b *Body) Park(ready func()) bool {
	if b.done.Load() {
		return false
	}
	b.unparked()
	if b.chunked != nil {
		b.chunked.skipBufferedEnd()
		if b.chunked.err != nil {
			return false // the next Read tells
		}
	}
	if b.eof || b.done.Load() || b.err != nil || b.c.br.Buffered() > 0 {
		return false
	}
	c := b.c
	br := c.br
	c.br = nil // before ready can run: its Read takes a buffer
	if !c.park(ready) {
		c.br = br
		return false
	}
	br.Reset(nil)
	clientReaders.Put(br)
	return true
}

// unparked gives the connection a read buffer again after WaitReadable or
// Park let it go.
func (b *Body) unparked() {
	c := b.c
	if c.br != nil {
		return
	}
	c.br = clientReaders.Get().(*bufio.Reader)
	c.br.Reset(c.nc)
	if b.chunked != nil {
		b.chunked.br = c.br
	}
}

// clientReaders are the read buffers of upstream connections.
var clientReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, clientBufSize) }}

// Close releases the connection: back to the pool when the body was read
// to its end, closed otherwise. It may be called from another goroutine to
// stop a Read in progress.
func (b *Body) Close() error {
	b.release(false)
	return nil
}

// release pools the connection when atEOF (only Read, having read the body
// to its end, says so) and closes it otherwise. Only the first call counts.
func (b *Body) release(atEOF bool) {
	if b.done.Swap(true) {
		return
	}
	if atEOF && b.reuse && b.watch.stopWatch() {
		b.p.put(b.c)
		return
	}
	b.watch.stopWatch()
	b.c.close()
}

// readLength reads from br a body of which *left bytes remain, and says
// io.EOF with its last bytes; the stream ending sooner is
// io.ErrUnexpectedEOF.
func readLength(br *bufio.Reader, p []byte, left *int64) (int, error) {
	if int64(len(p)) > *left {
		p = p[:*left]
	}
	n, err := br.Read(p)
	*left -= int64(n)
	if *left == 0 {
		return n, io.EOF
	}
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

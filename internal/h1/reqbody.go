package h1

import (
	"errors"
	"io"
	"sync"
)

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

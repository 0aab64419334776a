// Package sse reads and writes Server-Sent Events as a relay needs them:
// whole events, byte for byte, flushed one at a time, with keep-alive
// comments in the silences.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"sync"
)

// ErrEventTooLarge reports an event longer than the reader's bound.
var ErrEventTooLarge = errors.New("reading sse event: event exceeds size bound")

// Reader splits an SSE stream into events. It is lossless: the blocks that
// Next returns, followed by Rest, are exactly the bytes that were read. A
// block ends at a blank line (WHATWG HTML, "Event stream interpretation";
// lines end in LF or CRLF; a lone CR is kept as data, which no MCP server
// sends).
type Reader struct {
	src  io.Reader
	br   *bufio.Reader
	max  int
	buf  []byte       // the event being assembled; reused between calls
	wait readableWait // set for an idle reader (NewIdleReader)
}

// readableWait is a source that can wait for bytes holding no buffer, as
// an upstream response body does (h1.Body).
type readableWait interface{ WaitReadable() error }

const readerBufSize = 1 << 10

// NewReader returns a Reader over r whose events may be at most max bytes
// (max <= 0 means 4 MiB).
func NewReader(r io.Reader, max int) *Reader {
	if max <= 0 {
		max = 4 << 20
	}
	// The buffer is small: an idle stream holds it for as long as it is
	// open, and a long line is put together in buf anyway.
	return &Reader{src: r, br: bufio.NewReaderSize(r, readerBufSize), max: max}
}

// NewIdleReader is NewReader for a stream that is idle most of the time (a
// standalone GET stream): when r can wait for bytes without a buffer
// (WaitReadable), the Reader holds none between events either, neither its
// own nor r's, and takes them back when bytes come. A wait costs a
// non-blocking peek or two; a stream with events back to back finds its
// bytes buffered and does not wait.
func NewIdleReader(r io.Reader, max int) *Reader {
	w, ok := r.(readableWait)
	if !ok {
		return NewReader(r, max)
	}
	if max <= 0 {
		max = 4 << 20
	}
	br := idleBufs.Get().(*bufio.Reader)
	br.Reset(r)
	return &Reader{src: r, br: br, max: max, wait: w}
}

var idleBufs = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readerBufSize) }}

// parker is a source that can also wait for bytes without a goroutine
// (h1.Body.Park).
type parker interface{ Park(ready func()) bool }

// Park lets an idle reader's buffers go, as between events, and arranges
// for ready to be called once, from another goroutine, when its source has
// bytes (or fails, or ends), without a goroutine waiting meanwhile; Next
// then reads them. It reports false, calling nothing, when bytes are
// buffered or the source cannot wait so: the caller calls Next as usual.
func (r *Reader) Park(ready func()) bool {
	p, ok := r.src.(parker)
	if !ok || r.wait == nil || r.br == nil || r.br.Buffered() > 0 {
		return false
	}
	br := r.br
	r.br, r.buf = nil, nil // before ready can run: its Next takes them again
	if !p.Park(ready) {
		r.br = br
		return false
	}
	br.Reset(nil)
	idleBufs.Put(br)
	return true
}

// waitIdle waits for the next bytes of an idle reader with nothing
// buffered, its buffers let go meanwhile.
func (r *Reader) waitIdle() error {
	if r.br == nil { // parked
		r.br = idleBufs.Get().(*bufio.Reader)
		r.br.Reset(r.src)
		return nil
	}
	if r.wait == nil || r.br.Buffered() > 0 {
		return nil
	}
	r.br.Reset(nil)
	idleBufs.Put(r.br)
	r.br, r.buf = nil, nil
	err := r.wait.WaitReadable()
	r.br = idleBufs.Get().(*bufio.Reader)
	r.br.Reset(r.src)
	return err
}

// Next returns the next whole event block, including its terminating blank
// line. The slice is valid until the next call. At the end of the stream it
// returns io.EOF; bytes of an unfinished event are then in Rest.
func (r *Reader) Next() ([]byte, error) {
	if err := r.waitIdle(); err != nil {
		return nil, err
	}
	r.buf = r.buf[:0]
	long := false // the line so far filled the buffer: this is more of it
	for {
		line, err := r.br.ReadSlice('\n')
		if len(r.buf)+len(line) > r.max {
			return nil, ErrEventTooLarge
		}
		r.buf = append(r.buf, line...)
		switch {
		case err == nil:
			if !long && isBlank(line) && !onlyBlankLines(r.buf) {
				return r.buf, nil
			}
			long = false
		case errors.Is(err, bufio.ErrBufferFull):
			long = true // a long line: keep reading it
		default:
			return nil, err
		}
	}
}

// Rest returns the bytes of an event left unfinished when Next returned an
// error: a relay forwards them so that nothing read is lost.
func (r *Reader) Rest() []byte { return r.buf }

func isBlank(line []byte) bool {
	return len(line) == 1 || (len(line) == 2 && line[0] == '\r')
}

// onlyBlankLines reports a block of nothing but line ends: blank lines
// between events dispatch nothing, so they join the next event's block.
func onlyBlankLines(b []byte) bool {
	return len(bytes.Trim(b, "\r\n")) == 0
}

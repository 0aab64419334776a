package stdio

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// ErrLineTooLong is returned by a lineReader for a line longer than its
// bound: the stream cannot be resynchronised, so the child is lost.
var ErrLineTooLong = errors.New("line too long")

// lineReader reads newline-delimited messages (MCP stdio transport: "each
// message is delimited by a newline") of at most max bytes each.
type lineReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line without its newline (and without a CR before
// it); the slice is valid until the next call. A last line without a
// newline is returned with io.EOF on the call after it.
func (l *lineReader) next() ([]byte, error) {
	l.buf = l.buf[:0]
	for {
		chunk, err := l.r.ReadSlice('\n')
		if err == nil && len(l.buf) == 0 && len(chunk) <= l.max+1 {
			// The whole line is in the reader's buffer: it is returned
			// from there, valid until the next read, as l.buf would be.
			return trimCR(chunk[:len(chunk)-1]), nil
		}
		if len(l.buf)+len(chunk) > l.max+1 { // the line and its newline
			return nil, fmt.Errorf("%w: over %d bytes", ErrLineTooLong, l.max)
		}
		l.buf = append(l.buf, chunk...)
		switch {
		case err == nil:
			return trimCR(l.buf[:len(l.buf)-1]), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(l.buf) > 0:
			if len(l.buf) > l.max {
				return nil, fmt.Errorf("%w: over %d bytes", ErrLineTooLong, l.max)
			}
			return l.buf, nil
		default:
			return nil, err
		}
	}
}

// trimCR returns line without a CR at its end.
func trimCR(line []byte) []byte {
	if n := len(line); n > 0 && line[n-1] == '\r' {
		return line[:n-1]
	}
	return line
}

package h1

import (
	"bufio"
	"errors"
	"io"
)

// chunkedReader reads a chunked body (RFC 9112 section 7.1) from br. It
// returns each chunk's bytes as soon as they arrive, so an SSE event in a
// chunk is not held back for the next one, and at the end it reads and
// discards the trailer section, leaving br at the next response.
type chunkedReader struct {
	br       *bufio.Reader
	left     int64 // bytes left in the current chunk
	needCRLF bool  // a chunk's data ended; its CRLF comes next
	err      error // sticky; io.EOF once the body and trailers are read
}

func (c *chunkedReader) Read(p []byte) (int, error) {
	if len(p) == 0 && c.err == nil {
		return 0, nil
	}
	for c.err == nil {
		switch {
		case c.left > 0:
			if len(p) == 0 {
				return 0, nil
			}
			if int64(len(p)) > c.left {
				p = p[:c.left]
			}
			n, err := c.br.Read(p)
			c.left -= int64(n)
			if c.left == 0 {
				c.needCRLF = true
			}
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = io.ErrUnexpectedEOF
				}
				c.err = err
			}
			if n > 0 {
				return n, nil
			}
		case c.needCRLF:
			budget := 2
			line, err := readLine(c.br, &budget)
			if err == nil && len(line) != 0 {
				err = malformed("chunk data longer than its size")
			}
			c.setErr(err)
			c.needCRLF = false
		default:
			c.setErr(c.readSize())
		}
	}
	return 0, c.err
}

func (c *chunkedReader) setErr(err error) {
	if err == nil {
		return
	}
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	c.err = err
}

// readSize reads a chunk-size line; for the last chunk it reads the
// trailers too and ends the body.
func (c *chunkedReader) readSize() error {
	budget := MaxHeadBytes
	line, err := readLine(c.br, &budget)
	if err != nil {
		return err
	}
	n, err := parseChunkSize(line)
	if err != nil {
		return err
	}
	if n > 0 {
		c.left = n
		return nil
	}
	for {
		line, err := readLine(c.br, &budget)
		if err != nil {
			return err
		}
		if len(line) == 0 {
			c.err = io.EOF
			return nil
		}
	}
}

// parseChunkSize parses "1a;ext=v" (hex size, optional extensions, which
// are ignored).
func parseChunkSize(line []byte) (int64, error) {
	var n int64
	i := 0
	for ; i < len(line); i++ {
		c := line[i]
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			goto end
		}
		if i >= 15 {
			return 0, malformed("chunk size too large")
		}
		n = n<<4 | int64(d)
	}
end:
	if i == 0 {
		return 0, malformed("bad chunk size")
	}
	rest := line[i:]
	for len(rest) > 0 && (rest[0] == ' ' || rest[0] == '\t') {
		rest = rest[1:]
	}
	if len(rest) > 0 && rest[0] != ';' {
		return 0, malformed("bad chunk size")
	}
	return n, nil
}

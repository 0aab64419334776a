package h1

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// Limits on a chunked body's framing, net/http's, so that what one reads
// the other reads too (net/http/internal/chunked.go and transfer.go).
const (
	// maxChunkLine is the longest chunk-size line, CRLF included: net/http
	// refuses one that does not fit its 4 KiB read buffer.
	maxChunkLine = 4 << 10
	// maxTrailerBytes is the longest trailer section, its closing CRLF
	// included: net/http looks for the CRLF CRLF that ends it within its
	// read buffer.
	maxTrailerBytes = 4 << 10
	// maxChunkExcess is how far chunk-size lines may outgrow the data they
	// carry (16 bytes per chunk and twice its size are free), against a
	// sender that pads tiny chunks with long extensions.
	maxChunkExcess = 16 << 10
)

// errBadTrailer is wrapped by the errors about a malformed trailer section.
var errBadTrailer = malformed("bad trailer field")

// chunkedReader reads a chunked body (RFC 9112 section 7.1) from br. It
// returns each chunk's bytes as soon as they arrive, so an SSE event in a
// chunk is not held back for the next one, and at the end it reads,
// checks and discards the trailer section, leaving br at the next message.
//
// It refuses what net/http's reader refuses, so that no message reads one
// way here and another way in net/http: a chunk-size line or a chunk's end
// without CRLF, a bare CR anywhere in a chunk-size line, its extensions
// included (CVE-2025-22871; RFC 9112 section 7.1 and erratum 7633 allow
// no bare LF there), a size of more than 16 hex digits or past int64,
// whitespace between the size and ";", lines longer than maxChunkLine, and
// more than maxChunkExcess of framing beyond the data. Trailer fields are
// held to the header rules (RFC 9112 section 7.1.2): CRLF line ends, a
// token, a colon, a value without control characters, no obsolete line
// folding, and the whole section within maxTrailerBytes.
type chunkedReader struct {
	br       *bufio.Reader
	left     int64 // bytes left in the current chunk
	needCRLF bool  // a chunk's data ended; its CRLF comes next
	excess   int64 // framing bytes not paid for by data, as net/http counts them
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
			c.setErr(c.readDataEnd())
			c.needCRLF = false
		default:
			c.setErr(c.readSize())
		}
	}
	return 0, c.err
}

// skipBufferedEnd reads the CRLF after a chunk's data when it is buffered
// already, without blocking: what is left buffered after it is the next
// chunk's, if anything.
func (c *chunkedReader) skipBufferedEnd() {
	if c.err == nil && c.needCRLF && c.br.Buffered() >= 2 {
		c.setErr(c.readDataEnd())
		c.needCRLF = false
	}
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

// readDataEnd reads the CRLF after a chunk's data: those two bytes and no
// others.
func (c *chunkedReader) readDataEnd() error {
	b, err := c.br.Peek(2)
	if len(b) > 0 && b[0] != '\r' || len(b) > 1 && b[1] != '\n' {
		return malformed("chunk data not followed by CRLF")
	}
	if err != nil {
		return err
	}
	_, err = c.br.Discard(2)
	return err
}

// readSize reads a chunk-size line; for the last chunk it reads the
// trailers too and ends the body.
func (c *chunkedReader) readSize() error {
	budget := maxChunkLine
	line, err := readCRLFLine(c.br, &budget)
	if err != nil {
		return err
	}
	c.excess += int64(len(line)) + 2
	n, err := parseChunkSize(line)
	if err != nil {
		return err
	}
	if n == 0 {
		if err := readTrailers(c.br); err != nil {
			return err
		}
		c.err = io.EOF
		return nil
	}
	// net/http's rule: 16 bytes of framing per chunk and twice the data
	// are free; the rest adds up (a size cannot reach 1<<62: 16 digits
	// and int64).
	c.excess = max(c.excess-16-2*n, 0)
	if c.excess > maxChunkExcess {
		return malformed("chunked encoding with too much framing")
	}
	c.left = n
	return nil
}

// readCRLFLine returns the next line without its CRLF, which it must end
// in, and refuses a bare CR before it or a bare LF ending it.
func readCRLFLine(br *bufio.Reader, budget *int) ([]byte, error) {
	line, err := readRawLine(br, budget)
	if err != nil {
		return nil, err
	}
	switch i := bytes.IndexByte(line, '\r'); {
	case i < 0:
		return nil, malformed("chunk line ends in a bare LF")
	case i != len(line)-2:
		return nil, malformed("bare CR in a chunk line")
	}
	return line[:len(line)-2], nil
}

// parseChunkSize parses "1a", "1a;ext=v" or "1a \t" as net/http does: hex
// digits, at most 16 of them, then OWS only if no extension follows (it
// trims the line's end, then cuts the extensions off, then reads the size).
// Extensions are ignored.
func parseChunkSize(line []byte) (int64, error) {
	for len(line) > 0 && (line[len(line)-1] == ' ' || line[len(line)-1] == '\t') {
		line = line[:len(line)-1]
	}
	if i := bytes.IndexByte(line, ';'); i >= 0 {
		line = line[:i]
	}
	if len(line) == 0 {
		return 0, malformed("empty chunk size")
	}
	if len(line) > 16 {
		return 0, malformed("chunk size too large")
	}
	var n uint64
	for _, c := range line {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, malformed("bad chunk size")
		}
		n = n<<4 | uint64(d)
	}
	if n >= 1<<62 {
		// No body gets there; net/http refuses such a size as too much
		// framing, or reads until the connection ends.
		return 0, malformed("chunk size too large")
	}
	return int64(n), nil
}

// readTrailers reads the trailer section after the last chunk, up to and
// including the empty line, and discards it. Each field line must be one
// the header parser would take, and end in CRLF.
func readTrailers(br *bufio.Reader) error {
	budget := maxTrailerBytes
	for {
		line, err := readRawLine(br, &budget)
		if err != nil {
			if errors.Is(err, errTooLarge) {
				return malformed("trailer section too large")
			}
			return err
		}
		if len(line) < 2 || line[len(line)-2] != '\r' {
			return errBadTrailer
		}
		line = line[:len(line)-2]
		if len(line) == 0 {
			return nil
		}
		if !validFieldLine(line) {
			return errBadTrailer
		}
	}
}

// validFieldLine reports whether a line is "name: value" with a token for
// a name and a value without control characters: no obsolete folding, no
// space before the colon.
func validFieldLine(line []byte) bool {
	colon := bytes.IndexByte(line, ':')
	return colon > 0 && validName(line[:colon]) && validValue(line[colon+1:])
}

package h1

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// readChunked decodes s and returns the body, the bytes left in the reader
// after it, and the error that ended the body (nil at io.EOF).
func readChunked(t *testing.T, s string) (string, string, error) {
	t.Helper()
	br := bufio.NewReader(strings.NewReader(s))
	body, err := io.ReadAll(&chunkedReader{br: br})
	rest, rerr := io.ReadAll(br)
	if rerr != nil {
		t.Fatalf("reading the rest: %v", rerr)
	}
	return string(body), string(rest), err
}

func TestChunkedValid(t *testing.T) {
	for _, tc := range []struct {
		name, in, body, rest string
	}{
		{"one chunk", "5\r\nhello\r\n0\r\n\r\n", "hello", ""},
		{"several chunks", "5\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\n\r\n", "hello world", ""},
		{"empty body", "0\r\n\r\n", "", ""},
		{"lower-case hex", "a\r\n0123456789\r\n1f\r\n" + strings.Repeat("x", 31) + "\r\n0\r\n\r\n", "0123456789" + strings.Repeat("x", 31), ""},
		{"upper-case hex", "A\r\n0123456789\r\n1F\r\n" + strings.Repeat("x", 31) + "\r\n0\r\n\r\n", "0123456789" + strings.Repeat("x", 31), ""},
		{"mixed-case hex", "aB\r\n" + strings.Repeat("y", 0xab) + "\r\n0\r\n\r\n", strings.Repeat("y", 0xab), ""},
		{"leading zeros", "0005\r\nhello\r\n000\r\n\r\n", "hello", ""},
		{"15 hex digits", "00000000000000a\r\n0123456789\r\n0\r\n\r\n", "0123456789", ""},
		{"16 hex digits", "000000000000000a\r\n0123456789\r\n0\r\n\r\n", "0123456789", ""},
		{"extensions", "5;name=value\r\nhello\r\n6;a;b=\"q;x\"\r\n world\r\n0;last\r\n\r\n", "hello world", ""},
		{"OWS inside and after an extension", "5; x = y \t\r\nhello\r\n0;\tz\r\n\r\n", "hello", ""},
		{"empty extension", "5;\r\nhello\r\n0\r\n\r\n", "hello", ""},
		{"OWS after size", "5 \t\r\nhello\r\n0 \r\n\r\n", "hello", ""},
		{"CRLF in data", "4\r\n\r\n\r\n\r\n0\r\n\r\n", "\r\n\r\n", ""},
		{"binary data", "3\r\n\x00\xff\n\r\n0\r\n\r\n", "\x00\xff\n", ""},
		{"next response follows", "5\r\nhello\r\n0\r\n\r\nHTTP/1.1 200 OK\r\n", "hello", "HTTP/1.1 200 OK\r\n"},
		{"trailers consumed", "5\r\nhello\r\n0\r\nX-Trailer: a\r\nX-Other: b\r\n\r\nNEXT", "hello", "NEXT"},
		{"trailer with an empty value and obs-text", "0\r\nX-E:\r\nX-O: caf\xc3\xa9\r\n\r\nNEXT", "", "NEXT"},
		{"chunk line of 4096 bytes", "5;" + strings.Repeat("e", maxChunkLine-4) + "\r\nhello\r\n0\r\n\r\n", "hello", ""},
		{"trailer section of 4096 bytes", "0\r\nX: " + strings.Repeat("t", maxTrailerBytes-7) + "\r\n\r\nNEXT", "", "NEXT"},
		{"extensions paid for by data", strings.Repeat("1;"+strings.Repeat("e", 100)+"\r\nx\r\n", 150) + "0\r\n\r\n", strings.Repeat("x", 150), ""},
		{"big chunk", "10000\r\n" + strings.Repeat("z", 0x10000) + "\r\n0\r\n\r\n", strings.Repeat("z", 0x10000), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, rest, err := readChunked(t, tc.in)
			if err != nil {
				t.Fatalf("error %v", err)
			}
			if body != tc.body {
				t.Errorf("body %q, want %q", trunc(body), trunc(tc.body))
			}
			if rest != tc.rest {
				t.Errorf("left after the body %q, want %q", rest, tc.rest)
			}
			// net/http reads the same body, ending at the same byte.
			want, n, err := netHTTPChunked([]byte(tc.in))
			if err != nil || string(want) != body || n != len(tc.in)-len(rest) {
				t.Errorf("net/http: %q from %d bytes, %v; chunkedReader %q from %d", trunc(string(want)), n, err, trunc(body), len(tc.in)-len(rest))
			}
		})
	}
}

func trunc(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

func TestChunkedInvalid(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     error // ErrMalformed, errBadTrailer or io.ErrUnexpectedEOF
		body     string
		// netHTTP: net/http's textproto reader takes this trailer section,
		// which the header rules refuse (FuzzChunked allows just that).
		netHTTP bool
	}{
		// CVE-2025-22871: no bare LF or CR in a chunk's framing.
		{name: "bare LF after the size", in: "5\nhello\r\n0\r\n\r\n", want: ErrMalformed},
		{name: "bare LF everywhere", in: "5\nhello\n0\n\nNEXT", want: ErrMalformed},
		{name: "bare LF after the data", in: "5\r\nhello\n0\r\n\r\n", want: ErrMalformed, body: "hello"},
		{name: "bare CR after the data", in: "5\r\nhello\r0\r\n\r\n", want: ErrMalformed, body: "hello"},
		{name: "bare LF after the last chunk", in: "5\r\nhello\r\n0\n\r\n", want: ErrMalformed, body: "hello"},
		{name: "bare CR in the size", in: "5\r\r\nhello\r\n0\r\n\r\n", want: ErrMalformed},
		{name: "bare CR in an extension", in: "5;a\rb\r\nhello\r\n0\r\n\r\n", want: ErrMalformed},
		{name: "bare CR then LF in an extension", in: "5;a\rb=\nhello\r\n0\r\n\r\n", want: ErrMalformed},
		{name: "bare LF ending an extension", in: "5;a=b\nhello\r\n0\r\n\r\n", want: ErrMalformed},
		{name: "request hidden behind a bare LF", in: "2;\n\r\nxx\r\n45\r\n0\r\n\r\nPOST /smuggled HTTP/1.1\r\nHost: a\r\n\r\n", want: ErrMalformed},

		{name: "missing CRLF after data", in: "5\r\nhelloX\r\n0\r\n\r\n", want: ErrMalformed, body: "hello"},
		{name: "data longer than size", in: "5\r\nhello world\r\n0\r\n\r\n", want: ErrMalformed, body: "hello"},
		{name: "next size glued to data", in: "5\r\nhello0\r\n\r\n", want: ErrMalformed, body: "hello"},
		{name: "empty size", in: "\r\nhello\r\n0\r\n\r\n", want: ErrMalformed},
		{name: "extension without a size", in: ";x\r\nhello\r\n0\r\n\r\n", want: ErrMalformed},
		{name: "not hex", in: "x\r\nhello\r\n0\r\n\r\n", want: ErrMalformed},
		{name: "size with garbage", in: "5x\r\nhello\r\n0\r\n\r\n", want: ErrMalformed},
		{name: "negative size", in: "-5\r\nhello\r\n0\r\n\r\n", want: ErrMalformed},
		{name: "signed size", in: "+5\r\nhello\r\n0\r\n\r\n", want: ErrMalformed},
		{name: "0x prefix", in: "0x5\r\nhello\r\n0\r\n\r\n", want: ErrMalformed},
		{name: "leading space", in: " 5\r\nhello\r\n0\r\n\r\n", want: ErrMalformed},
		{name: "space inside size", in: "1 0\r\n0123456789abcdef\r\n0\r\n\r\n", want: ErrMalformed},
		{name: "OWS before an extension", in: "5 ;x=y\r\nhello\r\n0\r\n\r\n", want: ErrMalformed},
		{name: "tab before an extension", in: "5\t;x\r\nhello\r\n0\r\n\r\n", want: ErrMalformed},
		{name: "17 hex digits", in: "0000000000000000a\r\n0123456789\r\n0\r\n\r\n", want: ErrMalformed},
		{name: "oversize", in: "10000000000000000\r\nx\r\n", want: ErrMalformed},
		{name: "huge", in: strings.Repeat("f", 40) + "\r\nx\r\n", want: ErrMalformed},
		{name: "size past 1<<62", in: "4000000000000000\r\nx\r\n", want: ErrMalformed},
		{name: "bad size after a chunk", in: "5\r\nhello\r\nzz\r\n", want: ErrMalformed, body: "hello"},
		{name: "chunk line of 4097 bytes", in: "5;" + strings.Repeat("e", maxChunkLine-3) + "\r\nhello\r\n0\r\n\r\n", want: ErrMalformed},
		{name: "size line over MaxHeadBytes", in: "5;" + strings.Repeat("e", MaxHeadBytes) + "\r\nhello\r\n0\r\n\r\n", want: ErrMalformed},
		{name: "long line after data", in: "5\r\nhello" + strings.Repeat("x", 5000) + "\r\n0\r\n\r\n", want: ErrMalformed, body: "hello"},
		{name: "extensions outgrowing the data", in: strings.Repeat("1;"+strings.Repeat("e", 100)+"\r\nx\r\n", 200) + "0\r\n\r\n", want: ErrMalformed, body: strings.Repeat("x", 190)},

		{name: "trailer section of 4097 bytes", in: "5\r\nhello\r\n0\r\nX: " + strings.Repeat("t", maxTrailerBytes-6) + "\r\n\r\n", want: ErrMalformed, body: "hello"},
		{name: "trailer line over MaxHeadBytes", in: "5\r\nhello\r\n0\r\nX: " + strings.Repeat("t", MaxHeadBytes) + "\r\n\r\n", want: ErrMalformed, body: "hello"},
		{name: "trailer without a colon", in: "0\r\nnot a field\r\n\r\n", want: errBadTrailer},
		{name: "trailer with an empty name", in: "0\r\n: v\r\n\r\n", want: errBadTrailer},
		{name: "trailer starting with a space", in: "0\r\n X: v\r\n\r\n", want: errBadTrailer},
		{name: "trailer with NUL", in: "0\r\nX: a\x00b\r\n\r\n", want: errBadTrailer},
		{name: "trailer with a bare CR", in: "0\r\nX: a\rb\r\n\r\n", want: errBadTrailer},
		{name: "blank trailer line of a bare LF", in: "0\r\n\nPOST /smuggled HTTP/1.1\r\nHost: a\r\n\r\n", want: errBadTrailer, netHTTP: true},
		{name: "trailer folded", in: "0\r\nX: 1\r\n 2\r\n\r\n", want: errBadTrailer, netHTTP: true},
		{name: "trailer with a space before the colon", in: "0\r\nX : 1\r\n\r\n", want: errBadTrailer, netHTTP: true},
		{name: "trailer ending in a bare LF", in: "0\r\nX: 1\nY: 2\r\n\r\n", want: errBadTrailer, netHTTP: true},
		{name: "trailer ending in CR CR LF", in: "0\r\nX: 1\r\r\n\r\n", want: errBadTrailer},

		{name: "empty input", in: "", want: io.ErrUnexpectedEOF},
		{name: "size only", in: "5", want: io.ErrUnexpectedEOF},
		{name: "size line only", in: "5\r\n", want: io.ErrUnexpectedEOF},
		{name: "short data", in: "5\r\nhel", want: io.ErrUnexpectedEOF, body: "hel"},
		{name: "no CRLF after data", in: "5\r\nhello", want: io.ErrUnexpectedEOF, body: "hello"},
		{name: "half CRLF after data", in: "5\r\nhello\r", want: io.ErrUnexpectedEOF, body: "hello"},
		{name: "no last chunk", in: "5\r\nhello\r\n", want: io.ErrUnexpectedEOF, body: "hello"},
		{name: "no blank line after last chunk", in: "5\r\nhello\r\n0\r\n", want: io.ErrUnexpectedEOF, body: "hello"},
		{name: "unterminated trailer", in: "5\r\nhello\r\n0\r\nX-T: v\r\n", want: io.ErrUnexpectedEOF, body: "hello"},
		{name: "unterminated trailer line", in: "0\r\nX-T: v", want: io.ErrUnexpectedEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, _, err := readChunked(t, tc.in)
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			if body != tc.body {
				t.Errorf("body read before the error %q, want %q", trunc(body), trunc(tc.body))
			}
			if _, _, err := netHTTPChunked([]byte(tc.in)); (err == nil) != tc.netHTTP {
				t.Errorf("net/http's error %v; want one: %v", err, !tc.netHTTP)
			}
		})
	}
}

func TestChunkedTrailersTooLarge(t *testing.T) {
	in := "0\r\n" + strings.Repeat("X-T: "+strings.Repeat("t", 1000)+"\r\n", 70) + "\r\n"
	if _, _, err := readChunked(t, in); !errors.Is(err, ErrMalformed) {
		t.Fatalf("70 KB of trailers: error %v, want ErrMalformed", err)
	}
}

func TestChunkedStickyError(t *testing.T) {
	cr := &chunkedReader{br: bufio.NewReader(strings.NewReader("5\r\nhelloX\r\n"))}
	buf := make([]byte, 16)
	n, err := cr.Read(buf)
	if n != 5 || err != nil {
		t.Fatalf("first Read = %d, %v; want 5, nil", n, err)
	}
	_, err1 := cr.Read(buf)
	if !errors.Is(err1, ErrMalformed) {
		t.Fatalf("second Read error %v, want ErrMalformed", err1)
	}
	n, err2 := cr.Read(buf)
	if n != 0 || err2 != err1 {
		t.Fatalf("third Read = %d, %v; want 0, %v", n, err2, err1)
	}

	// io.EOF is sticky too, and nothing past the body is read.
	br := bufio.NewReader(strings.NewReader("0\r\n\r\nNEXT"))
	cr = &chunkedReader{br: br}
	for i := range 3 {
		if n, err := cr.Read(buf); n != 0 || err != io.EOF {
			t.Fatalf("Read %d at the end = %d, %v; want 0, io.EOF", i, n, err)
		}
	}
	if rest, _ := io.ReadAll(br); string(rest) != "NEXT" {
		t.Fatalf("left after the body %q, want NEXT", rest)
	}
}

func TestChunkedSmallReads(t *testing.T) {
	const in = "5\r\nhello\r\n1;x\r\n \r\n10\r\n0123456789abcdef\r\n0\r\nT: v\r\n\r\nNEXT"
	const want = "hello 0123456789abcdef"

	br := bufio.NewReader(strings.NewReader(in))
	got, err := io.ReadAll(iotest.OneByteReader(&chunkedReader{br: br}))
	if err != nil || string(got) != want {
		t.Fatalf("one byte at a time: %q, %v; want %q", got, err, want)
	}
	if rest, _ := io.ReadAll(br); string(rest) != "NEXT" {
		t.Fatalf("left after the body %q, want NEXT", rest)
	}

	// The underlying connection delivering one byte at a time.
	br = bufio.NewReader(iotest.OneByteReader(strings.NewReader(in)))
	got, err = io.ReadAll(&chunkedReader{br: br})
	if err != nil || string(got) != want {
		t.Fatalf("from a one-byte reader: %q, %v; want %q", got, err, want)
	}

	// A Read never returns more than the chunk holds nor more than asked.
	br = bufio.NewReader(strings.NewReader(in))
	cr := &chunkedReader{br: br}
	buf := make([]byte, 3)
	var parts []string
	for {
		n, err := cr.Read(buf)
		if n > 0 {
			parts = append(parts, string(buf[:n]))
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	wantParts := []string{"hel", "lo", " ", "012", "345", "678", "9ab", "cde", "f"}
	if strings.Join(parts, "|") != strings.Join(wantParts, "|") {
		t.Fatalf("reads %q, want %q", parts, wantParts)
	}

	// A zero-length Read inside a chunk returns at once.
	cr = &chunkedReader{br: bufio.NewReader(strings.NewReader(in))}
	if n, err := cr.Read(buf[:1]); n != 1 || err != nil {
		t.Fatalf("Read(1) = %d, %v", n, err)
	}
	if n, err := cr.Read(nil); n != 0 || err != nil {
		t.Fatalf("Read(nil) inside a chunk = %d, %v; want 0, nil", n, err)
	}

	if err := iotest.TestReader(&chunkedReader{br: bufio.NewReader(strings.NewReader(in))}, []byte(want)); err != nil {
		t.Fatal(err)
	}
}

// readWithin calls r.Read(buf) and fails the test if it does not return
// within d.
func readWithin(t *testing.T, r io.Reader, buf []byte, d time.Duration) (int, error) {
	t.Helper()
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := r.Read(buf)
		done <- result{n, err}
	}()
	select {
	case res := <-done:
		return res.n, res.err
	case <-time.After(d):
		t.Fatalf("Read blocked for %v", d)
		return 0, nil
	}
}

func TestChunkedReturnsChunkBeforeNext(t *testing.T) {
	pr, pw := io.Pipe()
	t.Cleanup(func() { pr.Close(); pw.Close() })
	cr := &chunkedReader{br: bufio.NewReader(pr)}
	writes := make(chan string)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for s := range writes {
			if _, err := io.WriteString(pw, s); err != nil {
				return
			}
		}
		pw.Close()
	}()
	t.Cleanup(func() {
		select {
		case <-writerDone:
		default:
			pr.Close()
		}
	})

	buf := make([]byte, 64)
	// A whole chunk, CRLF included: its data must come back with nothing
	// more written.
	writes <- "5\r\nhello\r\n"
	n, err := readWithin(t, cr, buf, 5*time.Second)
	if err != nil || string(buf[:n]) != "hello" {
		t.Fatalf("first Read = %q, %v; want hello", buf[:n], err)
	}
	// Part of a chunk: the part comes back at once.
	writes <- "a\r\nevent:"
	n, err = readWithin(t, cr, buf, 5*time.Second)
	if err != nil || string(buf[:n]) != "event:" {
		t.Fatalf("second Read = %q, %v; want event:", buf[:n], err)
	}
	// The rest of that chunk, without its CRLF.
	writes <- " x\n\n"
	n, err = readWithin(t, cr, buf, 5*time.Second)
	if err != nil || string(buf[:n]) != " x\n\n" {
		t.Fatalf("third Read = %q, %v; want \" x\\n\\n\"", buf[:n], err)
	}
	writes <- "\r\n0\r\n\r\n"
	close(writes)
	n, err = readWithin(t, cr, buf, 5*time.Second)
	if n != 0 || err != io.EOF {
		t.Fatalf("last Read = %q, %v; want io.EOF", buf[:n], err)
	}
	<-writerDone
}

func BenchmarkChunked(b *testing.B) {
	var in bytes.Buffer
	for range 16 {
		in.WriteString("100\r\n")
		in.WriteString(strings.Repeat("x", 256))
		in.WriteString("\r\n")
	}
	in.WriteString("0\r\n\r\n")
	data := in.Bytes()
	r := bytes.NewReader(data)
	br := bufio.NewReader(r)
	buf := make([]byte, 1024)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		r.Reset(data)
		br.Reset(r)
		cr := chunkedReader{br: br}
		for {
			if _, err := cr.Read(buf); err != nil {
				if err != io.EOF {
					b.Fatal(err)
				}
				break
			}
		}
	}
}

package sse

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

func readAll(t *testing.T, r *Reader) (blocks []string, err error) {
	t.Helper()
	for {
		b, err := r.Next()
		if err != nil {
			return blocks, err
		}
		blocks = append(blocks, string(b))
	}
}

func TestReaderSplitsEvents(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
		rest string
	}{
		{"two events", "id: 1\ndata: a\n\ndata: b\n\n", []string{"id: 1\ndata: a\n\n", "data: b\n\n"}, ""},
		{"crlf", "data: a\r\n\r\n", []string{"data: a\r\n\r\n"}, ""},
		{"priming event and comment", "id: 0\ndata:\n\n: keep-alive\n\n", []string{"id: 0\ndata:\n\n", ": keep-alive\n\n"}, ""},
		{"blank lines join the next event", "\n\ndata: a\n\n", []string{"\n\ndata: a\n\n"}, ""},
		{"unfinished event", "data: a\n\ndata: b\n", []string{"data: a\n\n"}, "data: b\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// One byte at a time, so events straddle reads.
			r := NewReader(iotest.OneByteReader(strings.NewReader(tt.in)), 0)
			got, err := readAll(t, r)
			if !errors.Is(err, io.EOF) {
				t.Fatalf("err = %v, want EOF", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("blocks (-want +got):\n%s", diff)
			}
			if string(r.Rest()) != tt.rest {
				t.Errorf("Rest = %q, want %q", r.Rest(), tt.rest)
			}
		})
	}
}

func TestReaderBoundsEvents(t *testing.T) {
	in := "data: " + strings.Repeat("x", 100) + "\n\n"
	r := NewReader(strings.NewReader(in), 64)
	if _, err := r.Next(); !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("err = %v, want ErrEventTooLarge", err)
	}
	// A long line within the bound spans several buffer fills.
	long := "data: " + strings.Repeat("y", 40<<10) + "\n\n"
	r = NewReader(strings.NewReader(long), 0)
	b, err := r.Next()
	if err != nil || string(b) != long {
		t.Fatalf("Next = %d bytes, %v; want the whole %d-byte event", len(b), err, len(long))
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		block string
		want  Event
	}{
		{"id: 7\nevent: message\ndata: {\"a\":1}\n\n", Event{ID: "7", HasID: true, Type: "message", Data: []byte(`{"a":1}`)}},
		{"data: a\ndata:b\r\n\r\n", Event{Data: []byte("a\nb")}},
		{"id:\ndata: x\n\n", Event{HasID: true, Data: []byte("x")}},
		{": keep-alive\n\n", Event{Comment: true}},
		{"retry: 1000\n\n", Event{Retry: "1000"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, Parse([]byte(tt.block))); diff != "" {
			t.Errorf("Parse(%q) (-want +got):\n%s", tt.block, diff)
		}
	}
}

// FuzzReader holds the relay's promise: whatever the bytes, the reader loses
// none and returns only whole events within the bound.
func FuzzReader(f *testing.F) {
	f.Add([]byte("id: 1\ndata: a\n\n: c\n\ndata: b\r\n\r\n"), 64)
	f.Add([]byte("\n\n\ndata"), 8)
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		max = max%512 + 1
		if max < 1 {
			max = -max + 1
		}
		r := NewReader(bytes.NewReader(in), max)
		var out []byte
		for {
			b, err := r.Next()
			if err != nil {
				if errors.Is(err, ErrEventTooLarge) {
					return
				}
				out = append(out, r.Rest()...)
				break
			}
			if len(b) > max || !(bytes.HasSuffix(b, []byte("\n\n")) || bytes.HasSuffix(b, []byte("\n\r\n"))) {
				t.Fatalf("block %q: over the bound or not ended by a blank line", b)
			}
			Parse(b)
			out = append(out, b...)
		}
		if !bytes.Equal(out, in) {
			t.Fatalf("relay lost bytes: in %q, out %q", in, out)
		}
		// An idle reader, which lets its buffer go whenever it has read
		// everything it had, gives the same blocks from bytes that come a
		// few at a time.
		want, got := blocks(NewReader(bytes.NewReader(in), max)), blocks(NewIdleReader(&trickle{in: in}, max))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("idle reader of %q (-plain +idle):\n%s", in, diff)
		}
	})
}

// blocks reads r to its end: its blocks, then its error and Rest.
func blocks(r *Reader) []string {
	var out []string
	for {
		b, err := r.Next()
		if err != nil {
			return append(out, "error: "+err.Error(), "rest: "+string(r.Rest()))
		}
		out = append(out, string(b))
	}
}

// trickle gives its bytes five at a time and can be waited on, as an
// upstream body can.
type trickle struct {
	in    []byte
	waits int
}

func (t *trickle) Read(p []byte) (int, error) {
	if len(t.in) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), 5)], t.in)
	t.in = t.in[n:]
	return n, nil
}

func (t *trickle) WaitReadable() error { t.waits++; return nil }

// TestIdleReaderWaitsBetweenEvents: an idle reader waits on its source
// only when it has nothing buffered, and its events are the plain
// reader's.
func TestIdleReaderWaitsBetweenEvents(t *testing.T) {
	src := &trickle{in: []byte("data: 1\n\n: keep-alive\n\ndata: 2\n\n")}
	r := NewIdleReader(src, 0)
	got := blocks(r)
	want := []string{"data: 1\n\n", ": keep-alive\n\n", "data: 2\n\n", "error: EOF", "rest: "}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if src.waits == 0 || src.waits > 4 {
		t.Errorf("%d waits for 3 events arriving 5 bytes at a time", src.waits)
	}
}

// TestReaderLineFillingBuffer: a line exactly as long as the read buffer
// comes back from bufio in two pieces, the second a lone LF. That LF ends
// the line, not the event.
func TestReaderLineFillingBuffer(t *testing.T) {
	for _, n := range []int{readerBufSize - 1, readerBufSize, readerBufSize + 1, 2 * readerBufSize} {
		line := "data: " + strings.Repeat("x", n-len("data: "))
		event := line + "\n" + "data: more\n\n"
		for _, eol := range []string{"\n", "\r\n"} {
			ev := strings.ReplaceAll(event, "\n", eol)
			r := NewReader(strings.NewReader(ev+"data: next"+eol+eol), 0)
			block, err := r.Next()
			if err != nil {
				t.Fatalf("n=%d: %v", n, err)
			}
			if string(block) != ev {
				t.Fatalf("n=%d eol=%q: first block is %d bytes, want the %d-byte event", n, eol, len(block), len(ev))
			}
			if block, err := r.Next(); err != nil || string(block) != "data: next"+eol+eol {
				t.Fatalf("n=%d: second block %q, %v", n, block, err)
			}
		}
	}
}

// parkable is a trickle that can park: it says yes only between reads
// that left nothing (refuse makes it say no), and counts its parks.
type parkable struct {
	trickle
	parks  int
	refuse bool
}

func (p *parkable) Park(ready func()) bool {
	if p.refuse {
		return false
	}
	p.parks++
	ready()
	return true
}

// TestIdleReaderParks: an idle reader parks only with nothing buffered,
// lets its buffers go while parked, and reads on after it as if it had
// waited: the same events, byte for byte. A source that will not park
// leaves the reader as it was.
func TestIdleReaderParks(t *testing.T) {
	in := "data: 1\n\n: keep-alive\n\ndata: 2\n\n"
	src := &parkable{trickle: trickle{in: []byte(in)}}
	r := NewIdleReader(src, 0)
	if r.Park(func() {}) {
		// Nothing read yet, nothing buffered: it may park at once.
		if r.br != nil {
			t.Fatal("a parked reader holds its buffer")
		}
	}
	var got []string
	for {
		b, err := r.Next()
		if err != nil {
			got = append(got, "error: "+err.Error())
			break
		}
		got = append(got, string(b))
		parked := r.Park(func() {})
		if parked && r.br != nil {
			t.Fatal("a parked reader holds its buffer")
		}
	}
	want := []string{"data: 1\n\n", ": keep-alive\n\n", "data: 2\n\n", "error: EOF"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if src.parks == 0 {
		t.Error("an idle reader never parked between events")
	}

	src = &parkable{trickle: trickle{in: []byte(in)}, refuse: true}
	r = NewIdleReader(src, 0)
	if b, err := r.Next(); err != nil || string(b) != "data: 1\n\n" {
		t.Fatalf("%q %v", b, err)
	}
	if r.Park(func() { t.Error("ready called by a refused park") }) || r.br == nil {
		t.Fatal("a refused park left the reader parked or without its buffer")
	}
	if b, err := r.Next(); err != nil || string(b) != ": keep-alive\n\n" {
		t.Fatalf("after a refused park: %q %v", b, err)
	}
	if NewReader(strings.NewReader(in), 0).Park(func() {}) {
		t.Error("a plain reader parked")
	}
}

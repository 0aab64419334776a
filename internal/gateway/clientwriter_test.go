package gateway

import (
	"errors"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"
)

// stallWriter is a client's ResponseWriter whose writes block, while
// stalled, until a write deadline in the past is set, as a socket's do for
// a client that stops reading.
type stallWriter struct {
	http.ResponseWriter
	mu        sync.Mutex
	stalled   bool
	deadlines []time.Time // every SetWriteDeadline, in order
	cut       chan struct{}
}

func newStallWriter() *stallWriter {
	return &stallWriter{cut: make(chan struct{})}
}

func (s *stallWriter) Header() http.Header { return http.Header{} }
func (s *stallWriter) WriteHeader(int)     {}

func (s *stallWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	stalled := s.stalled
	s.mu.Unlock()
	if !stalled {
		return len(p), nil
	}
	<-s.cut
	return 0, os.ErrDeadlineExceeded
}

func (s *stallWriter) FlushError() error { return nil }

func (s *stallWriter) SetWriteDeadline(t time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deadlines = append(s.deadlines, t)
	if !t.IsZero() && t.Before(time.Now()) {
		select {
		case <-s.cut:
		default:
			close(s.cut)
		}
	}
	return nil
}

func (s *stallWriter) setDeadlines() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.deadlines...)
}

func TestClientWriterBound(t *testing.T) {
	t.Run("writes taken at once set no deadline", func(t *testing.T) {
		sw := newStallWriter()
		cw := newClientWriter(sw, time.Hour)
		for range 100 {
			if _, err := cw.Write([]byte("event\n\n")); err != nil {
				t.Fatal(err)
			}
			if err := cw.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		if d := sw.setDeadlines(); len(d) != 0 {
			t.Fatalf("deadlines set: %v", d)
		}
		if cw.failed {
			t.Fatal("client marked gone")
		}
	})
	t.Run("a write past the bound is cut", func(t *testing.T) {
		sw := newStallWriter()
		cw := newClientWriter(sw, 20*time.Millisecond)
		if _, err := cw.Write([]byte("first")); err != nil {
			t.Fatal(err)
		}
		sw.mu.Lock()
		sw.stalled = true
		sw.mu.Unlock()
		start := time.Now()
		_, err := cw.Write([]byte("second"))
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("stalled write: err %v, want the deadline's", err)
		}
		if el := time.Since(start); el < 20*time.Millisecond {
			t.Fatalf("cut after %v, before the bound", el)
		}
		if !cw.failed {
			t.Fatal("a client cut at its bound is not marked gone")
		}
		d := sw.setDeadlines()
		if len(d) != 1 || d[0].IsZero() || !d[0].Before(start) {
			t.Fatalf("deadlines %v: want one, in the past", d)
		}
	})
	t.Run("no bound", func(t *testing.T) {
		sw := newStallWriter()
		cw := newClientWriter(sw, 0)
		if cw.arm() != nil {
			t.Fatal("a writer without a bound armed one")
		}
		if _, err := cw.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		if len(sw.setDeadlines()) != 0 {
			t.Fatal("a writer without a bound armed one")
		}
	})
}

// TestWriteBoundFiredLate: a write that went through just as its bound
// fired lifts the deadline, so that the next write has its own bound, and
// a bound taken next from the pool still cuts at its time.
func TestWriteBoundFiredLate(t *testing.T) {
	sw := newStallWriter()
	lt := armLate(sw, writeDeadline, time.Millisecond)
	<-sw.cut // fired while the "write" was on its way
	lt.disarm(true)
	d := sw.setDeadlines()
	if len(d) != 2 || !d[0].Before(time.Now()) || !d[1].IsZero() {
		t.Fatalf("deadlines %v: want one in the past, then lifted", d)
	}
	sw.cut = make(chan struct{})
	lt = armLate(sw, writeDeadline, time.Millisecond)
	select {
	case <-sw.cut:
	case <-time.After(10 * time.Second):
		t.Fatal("a bound armed after one that fired never fired")
	}
	lt.disarm(false)
}

func BenchmarkClientWriterJSON(b *testing.B) {
	sw := newStallWriter()
	body := []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}`)
	b.ReportAllocs()
	for b.Loop() {
		cw := newClientWriter(sw, 30*time.Second)
		_, _ = cw.Write(body)
	}
}

package logwriter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// sink records each Write it gets, with its time. While shut, a Write
// waits until it is opened again, after telling entered.
type sink struct {
	mu      sync.Mutex
	gate    chan struct{} // nil when open
	entered chan struct{}
	writes  [][]byte
	times   []time.Time
}

func newSink() *sink { return &sink{entered: make(chan struct{}, 1)} }

func (s *sink) shut() {
	s.mu.Lock()
	s.gate = make(chan struct{})
	s.mu.Unlock()
}

func (s *sink) open() {
	s.mu.Lock()
	close(s.gate)
	s.gate = nil
	s.mu.Unlock()
}

func (s *sink) Write(p []byte) (int, error) {
	s.mu.Lock()
	gate := s.gate
	s.mu.Unlock()
	if gate != nil {
		signal(s.entered)
		<-gate
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes = append(s.writes, bytes.Clone(p))
	s.times = append(s.times, time.Now())
	return len(p), nil
}

func (s *sink) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.writes)
}

// lines parses everything written as JSON lines; every one must parse.
func (s *sink) lines(t *testing.T) []map[string]any {
	t.Helper()
	s.mu.Lock()
	all := bytes.Join(s.writes, nil)
	s.mu.Unlock()
	if len(all) > 0 && all[len(all)-1] != '\n' {
		t.Fatalf("output does not end with a newline: %q", all[max(0, len(all)-80):])
	}
	var out []map[string]any
	for l := range strings.Lines(string(all)) {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %d is not JSON (%v): %q", len(out), err, l)
		}
		out = append(out, m)
	}
	return out
}

// split separates the drop lines from the others, and sums their counts.
func split(t *testing.T, lines []map[string]any) (logged []map[string]any, reports []map[string]any, told uint64) {
	t.Helper()
	for _, m := range lines {
		if m["msg"] != "log lines dropped" {
			logged = append(logged, m)
			continue
		}
		if m["level"] != "WARN" {
			t.Errorf("drop line's level = %v, want WARN", m["level"])
		}
		if _, err := time.Parse(time.RFC3339Nano, fmt.Sprint(m["time"])); err != nil {
			t.Errorf("drop line's time: %v", err)
		}
		n, ok := m["dropped"].(float64)
		if !ok || n < 1 {
			t.Errorf("drop line's dropped = %v, want a count", m["dropped"])
		}
		reports = append(reports, m)
		told += uint64(n)
	}
	return logged, reports, told
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestSlogWritesALinePerWrite: the Writer's premise, that slog's JSON
// handler hands each record to one Write, newline included.
func TestSlogWritesALinePerWrite(t *testing.T) {
	s := newSink()
	log := slog.New(slog.NewJSONHandler(s, nil))
	for i := range 50 {
		log.Info("request", "i", i, "text", strings.Repeat("x\n", i))
	}
	if s.calls() != 50 {
		t.Fatalf("%d Writes for 50 records", s.calls())
	}
	for i, w := range s.writes {
		if bytes.IndexByte(w, '\n') != len(w)-1 {
			t.Fatalf("Write %d is not one whole line: %q", i, w)
		}
	}
}

// TestLinesArriveWholeAndInOrder: what slog logs through a Writer comes
// out, line for line and in order, in far fewer writes than lines.
func TestLinesArriveWholeAndInOrder(t *testing.T) {
	s := newSink()
	w := New(s, Options{MaxBytes: 16 << 20}) // room for all: no drops
	log := slog.New(slog.NewJSONHandler(w, nil))
	const n = 20_000
	for i := range n {
		log.Info("request", "i", i, "pad", strings.Repeat("p", i%300))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	lines := s.lines(t)
	if len(lines) != n {
		t.Fatalf("%d lines out of %d", len(lines), n)
	}
	for i, m := range lines {
		if m["i"] != float64(i) || m["msg"] != "request" {
			t.Fatalf("line %d = %v", i, m)
		}
	}
	if calls := s.calls(); calls > n/100 {
		t.Errorf("%d writes for %d lines, want batches", calls, n)
	}
	if w.Dropped() != 0 {
		t.Errorf("Dropped = %d, want 0", w.Dropped())
	}
}

// TestQuietLineWrittenAtOnce: a line into a quiet Writer is written at
// once, without Close; one right after it waits for Interval.
func TestQuietLineWrittenAtOnce(t *testing.T) {
	s := newSink()
	const interval = 300 * time.Millisecond
	w := New(s, Options{Interval: interval})
	defer w.Close()
	start := time.Now()
	w.Write([]byte("{\"msg\":\"reload refused\"}\n"))
	waitFor(t, "the first line", func() bool { return s.calls() == 1 })
	if d := s.times[0].Sub(start); d > interval/2 {
		t.Errorf("the first line written after %v, want at once", d)
	}
	w.Write([]byte("{\"msg\":\"reloaded\"}\n"))
	waitFor(t, "the second line", func() bool { return s.calls() == 2 })
	if d := s.times[1].Sub(s.times[0]); d < interval-20*time.Millisecond {
		t.Errorf("the second line written %v after the first, want %v", d, interval)
	}
}

// TestFullBatchWrittenAtOnce: a batch's worth is written without waiting
// for Interval.
func TestFullBatchWrittenAtOnce(t *testing.T) {
	s := newSink()
	w := New(s, Options{BatchBytes: 1000, Interval: time.Hour})
	defer w.Close()
	line := []byte(strings.Repeat("b", 99) + "\n")
	w.Write(line) // written at once: the next write is an hour away
	waitFor(t, "the first line", func() bool { return s.calls() == 1 })
	for range 9 {
		w.Write(line)
	}
	time.Sleep(20 * time.Millisecond)
	if s.calls() != 1 {
		t.Fatalf("written before a batch was full")
	}
	w.Write(line)
	waitFor(t, "the batch", func() bool { return s.calls() == 2 })
	if got := len(s.writes[1]); got != 1000 {
		t.Errorf("batch of %d bytes, want 1000", got)
	}
}

// TestFullBufferDropsAndNeverBlocks: while the output is stuck, Writes
// keep returning at once; what does not fit is dropped and counted, and
// once the output moves the drops are told in a line of their own.
func TestFullBufferDropsAndNeverBlocks(t *testing.T) {
	s := newSink()
	s.shut()
	w := New(s, Options{MaxBytes: 2000, BatchBytes: 500, Interval: time.Millisecond})
	log := slog.New(slog.NewJSONHandler(w, nil))
	log.Info("first")
	<-s.entered // the writing goroutine is stuck in the output
	const n = 10_000
	wrote := make(chan struct{})
	go func() {
		for i := range n {
			log.Info("request", "i", i)
		}
		close(wrote)
	}()
	select {
	case <-wrote:
	case <-time.After(10 * time.Second):
		t.Fatal("Write blocked on a stuck output")
	}
	dropped := w.Dropped()
	if dropped == 0 || dropped >= n {
		t.Fatalf("Dropped = %d of %d with a 2000-byte buffer", dropped, n)
	}
	s.open()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	logged, reports, told := split(t, s.lines(t))
	if got := uint64(len(logged)); got+dropped != n+1 {
		t.Errorf("%d lines out and %d dropped, of %d", got, dropped, n+1)
	}
	last := -1.0
	for _, m := range logged[1:] {
		i := m["i"].(float64)
		if i <= last {
			t.Fatalf("line %v after %v", i, last)
		}
		last = i
	}
	if len(reports) != 1 || told != dropped {
		t.Errorf("%d drop lines telling %d, want one telling %d", len(reports), told, dropped)
	}
	if w.Dropped() != dropped {
		t.Errorf("Dropped went from %d to %d", dropped, w.Dropped())
	}
}

// TestDropLineAtMostOnceASecond: drops soon after a drop line wait for
// the limit to pass, then are told without another Write or Close.
func TestDropLineAtMostOnceASecond(t *testing.T) {
	s := newSink()
	const every = 300 * time.Millisecond
	w := New(s, Options{MaxBytes: 100, Interval: time.Millisecond, reportEvery: every})
	defer w.Close()
	line := []byte(`{"pad":"` + strings.Repeat("d", 39) + "\"}\n") // 50 bytes
	reports := func() []time.Time {
		s.mu.Lock()
		defer s.mu.Unlock()
		var at []time.Time
		for i, b := range s.writes {
			if bytes.Contains(b, []byte(`"msg":"log lines dropped"`)) {
				at = append(at, s.times[i])
			}
		}
		return at
	}
	for round := 1; round <= 2; round++ {
		jam(s, w, line, line, line, line, line, line) // two fit, three drop
		waitFor(t, "a drop line", func() bool { return len(reports()) == round })
	}
	at := reports()
	if gap := at[1].Sub(at[0]); gap < every-10*time.Millisecond {
		t.Errorf("drop lines %v apart, want at least %v", gap, every)
	}
	_, _, told := split(t, s.lines(t))
	if told != 6 || w.Dropped() != 6 {
		t.Errorf("told %d drops, Dropped = %d, want 6", told, w.Dropped())
	}
}

// TestCloseWritesEverything: Close writes what is buffered at once, then
// Writes go straight through, and a second Close does nothing.
func TestCloseWritesEverything(t *testing.T) {
	s := newSink()
	w := New(s, Options{Interval: time.Hour})
	fmt.Fprintf(w, "{\"i\":0}\n")
	waitFor(t, "the first line", func() bool { return s.calls() == 1 })
	for i := 1; i < 100; i++ {
		fmt.Fprintf(w, "{\"i\":%d}\n", i)
	}
	if s.calls() != 1 {
		t.Fatal("written before Close")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if s.calls() != 2 || len(s.lines(t)) != 100 {
		t.Fatalf("%d writes, %d lines after Close; want 2 and 100", s.calls(), len(s.lines(t)))
	}
	fmt.Fprintf(w, "{\"i\":%d}\n", 100)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	lines := s.lines(t)
	if len(lines) != 101 || lines[100]["i"] != 100.0 {
		t.Fatalf("a Write after Close did not go through: %v", lines[len(lines)-1])
	}
}

// TestCloseTellsDropsAtOnce: Close tells the drops the once-a-second
// limit held back.
func TestCloseTellsDropsAtOnce(t *testing.T) {
	s := newSink()
	w := New(s, Options{MaxBytes: 10, Interval: time.Millisecond, reportEvery: time.Hour})
	a, b, c := []byte("{\"a\":1}\n"), []byte("{\"b\":2}\n"), []byte("{\"c\":3}\n")
	jam(s, w, a, b, c) // b fits, c drops
	waitFor(t, "the first drop line", func() bool { return len(s.lines(t)) == 3 })
	jam(s, w, a, b, c)
	waitFor(t, "the second b", func() bool { return len(s.lines(t)) == 5 })
	w.Close()
	lines := s.lines(t)
	_, reports, told := split(t, lines)
	if len(lines) != 6 || len(reports) != 2 || told != 2 || lines[5]["dropped"] != 1.0 {
		t.Fatalf("lines %v", lines)
	}
}

// jam writes first, and once the Writer's goroutine is stuck writing it out
// to s, the rest; then lets s go.
func jam(s *sink, w *Writer, first []byte, rest ...[]byte) {
	s.shut()
	w.Write(first)
	<-s.entered
	for _, p := range rest {
		w.Write(p)
	}
	s.open()
}

type failing struct{}

func (failing) Write(p []byte) (int, error) { return 0, errors.New("broken") }

// TestFailedWriteCountsDrops: lines lost to a failing output count as
// dropped, and Close returns the error.
func TestFailedWriteCountsDrops(t *testing.T) {
	w := New(failing{}, Options{Interval: time.Hour})
	for range 7 {
		w.Write([]byte("{}\n"))
	}
	if err := w.Close(); err == nil {
		t.Fatal("Close returned no error")
	}
	if w.Dropped() != 7 {
		t.Errorf("Dropped = %d, want 7", w.Dropped())
	}
}

// TestConcurrentWriters: lines of many goroutines come out whole, each
// goroutine's in its order; what is missing was counted as dropped.
func TestConcurrentWriters(t *testing.T) {
	s := newSink()
	w := New(s, Options{MaxBytes: 64 << 10, BatchBytes: 4 << 10, Interval: 5 * time.Millisecond})
	const writers, each = 8, 3000
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range each {
				fmt.Fprintf(w, "{\"g\":%d,\"i\":%d,\"pad\":%q}\n", g, i, strings.Repeat("c", i%100))
				if i%500 == 0 {
					_ = w.Dropped()
				}
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	logged, _, told := split(t, s.lines(t))
	last := make([]float64, writers)
	for g := range last {
		last[g] = -1
	}
	for _, m := range logged {
		g, i := int(m["g"].(float64)), m["i"].(float64)
		if i <= last[g] {
			t.Fatalf("writer %d: line %v after %v", g, i, last[g])
		}
		last[g] = i
	}
	if got := uint64(len(logged)) + w.Dropped(); got != writers*each {
		t.Errorf("%d lines out + %d dropped, want %d", len(logged), w.Dropped(), writers*each)
	}
	if told != w.Dropped() {
		t.Errorf("drop lines told %d, Dropped = %d", told, w.Dropped())
	}
}

var benchLine = []byte(`{"time":"2026-01-02T15:04:05.123456789Z","level":"INFO","msg":"request","http_method":"POST","method":"tools/call","era":"2025-11-25","replica":"http://10.0.0.1:8080/mcp","status":200,"outcome":"ok","attempts":1,"limit":"","cache":"","capacity":"","early_stream":false,"upstream_status":200,"events":0,"keepalives":0,"bytes":512,"duration_ms":1.234}` + "\n")

// BenchmarkWrite is one access-log-sized Write into the buffer.
func BenchmarkWrite(b *testing.B) {
	w := New(io.Discard, Options{})
	defer w.Close()
	b.SetBytes(int64(len(benchLine)))
	b.ReportAllocs()
	for b.Loop() {
		w.Write(benchLine)
	}
	b.StopTimer()
	b.ReportMetric(float64(w.Dropped())/float64(b.N), "drops/op")
}

// BenchmarkWriteParallel is Write from many goroutines at once.
func BenchmarkWriteParallel(b *testing.B) {
	w := New(io.Discard, Options{})
	defer w.Close()
	b.SetBytes(int64(len(benchLine)))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			w.Write(benchLine)
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(w.Dropped())/float64(b.N), "drops/op")
}

// BenchmarkSlogToPipe is a line like the access log's through slog's JSON
// handler into a pipe drained by another goroutine, as stderr read by a
// container runtime: straight, one write(2) per line, and through a
// Writer; and, for the cost of slog alone, into io.Discard.
func BenchmarkSlogToPipe(b *testing.B) {
	b.Run("discard", func(b *testing.B) { benchSlog(b, io.Discard) })
	for _, buffered := range []bool{false, true} {
		name := "direct"
		if buffered {
			name = "logwriter"
		}
		b.Run(name, func(b *testing.B) {
			r, pw, err := os.Pipe()
			if err != nil {
				b.Fatal(err)
			}
			drained := make(chan struct{})
			go func() { io.Copy(io.Discard, r); close(drained) }()
			var out io.Writer = pw
			var w *Writer
			if buffered {
				w = New(pw, Options{})
				out = w
			}
			benchSlog(b, out)
			if w != nil {
				w.Close()
				b.ReportMetric(float64(w.Dropped())/float64(b.N), "drops/op")
			}
			pw.Close()
			<-drained
			r.Close()
		})
	}
}

func benchSlog(b *testing.B, out io.Writer) {
	log := slog.New(slog.NewJSONHandler(out, nil))
	b.ReportAllocs()
	for b.Loop() {
		log.LogAttrs(b.Context(), slog.LevelInfo, "request",
			slog.String("method", "tools/call"),
			slog.String("replica", "http://10.0.0.1:8080/mcp"),
			slog.Int("status", 200),
			slog.String("outcome", "ok"),
			slog.Int64("bytes", 512),
			slog.Float64("duration_ms", 1.234))
	}
	b.StopTimer()
}

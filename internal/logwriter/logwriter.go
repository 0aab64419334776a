// Package logwriter is an io.Writer for a log of JSON lines that never
// writes on its caller's goroutine: each Write copies its lines into a
// bounded buffer in memory, and one goroutine writes the buffer out in
// batches, one write for many lines, as nginx buffers its access log.
//
// A line logged while the log is quiet is written at once; after a write
// out, the lines that follow wait for the next, Interval later (or as soon
// as they fill a batch). So a busy log costs one write per Interval, and a
// quiet one shows each line as it comes.
//
// A Write never waits for the output. When the buffer is full, the lines
// of that Write are dropped and counted (Dropped), and the next write out
// adds a line of its own that says how many:
//
//	{"time":"...","level":"WARN","msg":"log lines dropped","dropped":N}
//
// at most once a second, so the output stays JSON lines.
//
// Each Write must hold whole lines, as slog's handlers write them (one
// record, newline included, per Write): a Write is kept or dropped whole.
package logwriter

import (
	"bytes"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of Options.
const (
	DefaultMaxBytes   = 1 << 20
	DefaultBatchBytes = 64 << 10
	DefaultInterval   = 10 * time.Millisecond
)

// Options bound a Writer; a zero field takes its default.
type Options struct {
	// MaxBytes bounds the lines waiting to be written. The batch being
	// written out is held besides: at most twice MaxBytes in all.
	MaxBytes int
	// BatchBytes is how much buffered makes a batch written at once,
	// without waiting for Interval.
	BatchBytes int
	// Interval is the least time from one write out to the next, unless a
	// batch fills: how long a line waits at most, unless the output itself
	// is slower.
	Interval time.Duration

	reportEvery time.Duration // the limit on drop lines; tests shorten it
}

// Writer buffers lines for out. Its methods are safe for concurrent use.
type Writer struct {
	out      io.Writer
	max      int
	batch    int
	interval time.Duration

	mu     sync.Mutex
	buf    []byte // lines not yet taken by the writing goroutine
	closed bool   // after Close, Write writes through to out

	pending chan struct{} // a line went into an empty buffer
	full    chan struct{} // the buffer reached a batch
	quit    chan struct{}
	done    chan struct{}
	once    sync.Once

	dropped atomic.Uint64

	// Owned by the writing goroutine, and by Close once it is gone.
	spare       []byte
	reported    uint64 // drops already told in a line
	lastReport  time.Time
	reportEvery time.Duration
}

// New starts the goroutine writing to out; Close stops it.
func New(out io.Writer, opts Options) *Writer {
	w := &Writer{
		out:         out,
		max:         opts.MaxBytes,
		batch:       opts.BatchBytes,
		interval:    opts.Interval,
		pending:     make(chan struct{}, 1),
		full:        make(chan struct{}, 1),
		quit:        make(chan struct{}),
		done:        make(chan struct{}),
		reportEvery: opts.reportEvery,
	}
	if w.max <= 0 {
		w.max = DefaultMaxBytes
	}
	if w.batch <= 0 {
		w.batch = DefaultBatchBytes
	}
	w.batch = min(w.batch, w.max)
	if w.interval <= 0 {
		w.interval = DefaultInterval
	}
	if w.reportEvery <= 0 {
		w.reportEvery = time.Second
	}
	go w.run()
	return w
}

// Write copies p, whole lines, into the buffer, or drops it when the
// buffer has no room for it; either way it returns len(p) and no error,
// at once. After Close it writes p to the output itself.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	if w.closed {
		defer w.mu.Unlock()
		return w.out.Write(p)
	}
	n := len(w.buf)
	if n+len(p) > w.max {
		w.mu.Unlock()
		w.dropped.Add(1)
		return len(p), nil
	}
	w.buf = append(w.buf, p...)
	if n == 0 {
		signal(w.pending)
	}
	if n < w.batch && len(w.buf) >= w.batch {
		signal(w.full)
	}
	w.mu.Unlock()
	return len(p), nil
}

// Dropped is how many Writes were dropped since New: for a full buffer, or
// lost to a failed write out.
func (w *Writer) Dropped() uint64 { return w.dropped.Load() }

// Close writes out everything buffered, with a line for drops not yet
// told, and stops the goroutine; it returns the error of that last write.
// It waits for a write out in progress. Writes after Close go straight to
// the output.
func (w *Writer) Close() error {
	var err error
	w.once.Do(func() {
		close(w.quit)
		<-w.done
		w.mu.Lock()
		defer w.mu.Unlock()
		w.closed = true
		b := w.buf
		w.buf = nil
		err = w.writeOut(b, time.Now(), true)
	})
	return err
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// run writes the buffer out when a line arrives in it empty: at once when
// the last write out was interval ago or more, else once it is, or as soon
// as the buffer holds a batch. It also wakes to tell of drops the
// once-a-second limit held back.
func (w *Writer) run() {
	defer close(w.done)
	linger := time.NewTimer(w.interval)
	linger.Stop()
	report := time.NewTimer(w.reportEvery)
	report.Stop()
	var last time.Time // when the last write out ended
	for {
		select {
		case <-w.pending:
			if wait := w.interval - time.Since(last); wait > 0 {
				linger.Reset(wait)
				select {
				case <-linger.C:
				case <-w.full:
					linger.Stop()
				case <-w.quit:
					return
				}
			}
		case <-report.C:
		case <-w.quit:
			return
		}
		w.mu.Lock()
		b := w.buf
		w.buf = w.spare[:0]
		// A batch signalled now is the one taken.
		select {
		case <-w.full:
		default:
		}
		w.mu.Unlock()
		now := time.Now()
		w.writeOut(b, now, false)
		w.spare = b[:0]
		last = time.Now()
		if w.dropped.Load() > w.reported {
			// Held back by the limit, or the write failed: try again.
			wait := w.lastReport.Add(w.reportEvery).Sub(now)
			if wait <= 0 {
				wait = w.reportEvery
			}
			report.Reset(wait)
		}
	}
}

// writeOut writes b in one call, followed by the line telling of drops
// not yet told when a second has passed since the last one (or when
// final). The lines of a failed write count as dropped.
func (w *Writer) writeOut(b []byte, now time.Time, final bool) error {
	lines := len(b)
	dropped := w.dropped.Load()
	tell := dropped > w.reported && (final || now.Sub(w.lastReport) >= w.reportEvery)
	if tell {
		b = appendReport(b, now, dropped-w.reported)
	}
	if len(b) == 0 {
		return nil
	}
	n, err := w.out.Write(b)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	if err != nil {
		if lost := bytes.Count(b[min(n, lines):lines], []byte{'\n'}); lost > 0 {
			w.dropped.Add(uint64(lost))
		}
		if n < len(b) {
			return err
		}
	}
	if tell {
		w.reported, w.lastReport = dropped, now
	}
	return err
}

// appendReport appends the line telling of n drops, as slog's JSON handler
// would write it.
func appendReport(b []byte, now time.Time, n uint64) []byte {
	b = append(b, `{"time":"`...)
	b = now.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","level":"WARN","msg":"log lines dropped","dropped":`...)
	b = strconv.AppendUint(b, n, 10)
	return append(b, "}\n"...)
}

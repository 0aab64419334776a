// Package streamtest is the contract every streams.Buffer meets, run
// against the memory buffer and against a real redis-server.
package streamtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/streams"
)

// Harness is one buffer under test.
type Harness struct {
	// Buffer is fresh and empty, bounded by MaxStreamBytes per stream and
	// by TTL.
	Buffer         streams.Buffer
	MaxStreamBytes int
	TTL            time.Duration // short enough to wait out
}

// Run runs the contract; newHarness returns a fresh buffer per subtest.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	tests := []struct {
		name string
		run  func(t *testing.T, h Harness)
	}{
		{"replay after a position then end", testReplayThenEnd},
		{"follow events as they come", testFollow},
		{"unknown stream", testUnknown},
		{"oldest events go over the bound", testBound},
		{"streams expire", testExpire},
		{"replay after the last event of an ended stream", testAfterLast},
		{"readers at once", testReaders},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, newHarness(t)) })
	}
}

func ev(pos uint64, size int) streams.Event {
	d := fmt.Appendf(nil, "data: %d", pos)
	for len(d) < size-2 {
		d = append(d, '.')
	}
	return streams.Event{Pos: pos, Data: append(d, '\n', '\n')}
}

func appendN(t *testing.T, b streams.Buffer, key string, from, to uint64, size int) {
	t.Helper()
	var evs []streams.Event
	for p := from; p <= to; p++ {
		evs = append(evs, ev(p, size))
	}
	if err := b.Append(context.Background(), key, evs...); err != nil {
		t.Fatalf("Append: %v", err)
	}
}

// readAll reads a cursor to its end (io.EOF), within a deadline.
func readAll(t *testing.T, c streams.Cursor) ([]uint64, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got []uint64
	for {
		e, err := c.Next(ctx)
		if errors.Is(err, io.EOF) {
			return got, nil
		}
		if err != nil {
			return got, err
		}
		if string(e.Data) != string(ev(e.Pos, len(e.Data)).Data) {
			t.Fatalf("event %d holds %q", e.Pos, e.Data)
		}
		got = append(got, e.Pos)
	}
}

func checkRange(t *testing.T, got []uint64, from, to uint64) {
	t.Helper()
	if len(got) != int(to-from+1) {
		t.Fatalf("replayed %v, want %d..%d", got, from, to)
	}
	for i, p := range got {
		if p != from+uint64(i) {
			t.Fatalf("replayed %v, want %d..%d", got, from, to)
		}
	}
}

func testReplayThenEnd(t *testing.T, h Harness) {
	appendN(t, h.Buffer, "k", 1, 5, 20)
	if err := h.Buffer.End(context.Background(), "k"); err != nil {
		t.Fatal(err)
	}
	for _, after := range []uint64{0, 2} {
		c, err := h.Buffer.Replay(context.Background(), "k", after)
		if err != nil {
			t.Fatal(err)
		}
		got, err := readAll(t, c)
		if err != nil {
			t.Fatal(err)
		}
		checkRange(t, got, after+1, 5)
	}
}

func testFollow(t *testing.T, h Harness) {
	appendN(t, h.Buffer, "k", 1, 2, 20)
	c, err := h.Buffer.Replay(context.Background(), "k", 1)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for p := uint64(3); p <= 6; p++ {
			time.Sleep(20 * time.Millisecond)
			appendN(t, h.Buffer, "k", p, p, 20)
		}
		_ = h.Buffer.End(context.Background(), "k")
	}()
	got, err := readAll(t, c)
	if err != nil {
		t.Fatal(err)
	}
	checkRange(t, got, 2, 6)
}

func testUnknown(t *testing.T, h Harness) {
	if _, err := h.Buffer.Replay(context.Background(), "none", 0); !errors.Is(err, streams.ErrUnknown) {
		t.Fatalf("Replay of an unknown stream: %v, want ErrUnknown", err)
	}
}

func testBound(t *testing.T, h Harness) {
	size := h.MaxStreamBytes / 4 // four fit
	appendN(t, h.Buffer, "k", 1, 10, size)
	_ = h.Buffer.End(context.Background(), "k")
	if _, err := h.Buffer.Replay(context.Background(), "k", 0); !errors.Is(err, streams.ErrGone) {
		t.Fatalf("Replay needing a dropped event: %v, want ErrGone", err)
	}
	c, err := h.Buffer.Replay(context.Background(), "k", 7)
	if err != nil {
		t.Fatalf("Replay of what is kept: %v", err)
	}
	got, err := readAll(t, c)
	if err != nil {
		t.Fatal(err)
	}
	checkRange(t, got, 8, 10)
}

func testExpire(t *testing.T, h Harness) {
	appendN(t, h.Buffer, "k", 1, 2, 20)
	time.Sleep(h.TTL + h.TTL/2)
	if _, err := h.Buffer.Replay(context.Background(), "k", 0); !errors.Is(err, streams.ErrUnknown) {
		t.Fatalf("Replay after the TTL: %v, want ErrUnknown", err)
	}
}

func testAfterLast(t *testing.T, h Harness) {
	appendN(t, h.Buffer, "k", 1, 3, 20)
	_ = h.Buffer.End(context.Background(), "k")
	c, err := h.Buffer.Replay(context.Background(), "k", 3)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := readAll(t, c); err != nil || len(got) != 0 {
		t.Fatalf("replay after the last event: %v, %v", got, err)
	}
}

func testReaders(t *testing.T, h Harness) {
	appendN(t, h.Buffer, "k", 1, 3, 20)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		c, err := h.Buffer.Replay(context.Background(), "k", 0)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			got, err := readAll(t, c)
			if err == nil && len(got) != 8 {
				err = fmt.Errorf("reader got %v", got)
			}
			errs <- err
		})
	}
	appendN(t, h.Buffer, "k", 4, 8, 20)
	_ = h.Buffer.End(context.Background(), "k")
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

package streams_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/streams"
	"github.com/mcpfleet/mcpfleet/internal/streams/streamtest"
)

func TestMemoryContract(t *testing.T) {
	streamtest.Run(t, func(t *testing.T) streamtest.Harness {
		o := streams.Options{TTL: 200 * time.Millisecond, MaxStreamBytes: 400}
		return streamtest.Harness{Buffer: streams.NewMemory(o), MaxStreamBytes: 400, TTL: o.TTL}
	})
}

// TestMemoryTotalBound: over the total, a stream's new events push out its
// own oldest; the bytes held never exceed the bound.
func TestMemoryTotalBound(t *testing.T) {
	m := streams.NewMemory(streams.Options{MaxStreamBytes: 1000, MaxTotalBytes: 1500})
	ctx := context.Background()
	big := make([]byte, 100)
	for p := uint64(1); p <= 10; p++ {
		_ = m.Append(ctx, "a", streams.Event{Pos: p, Data: big})
	}
	for p := uint64(1); p <= 10; p++ {
		_ = m.Append(ctx, "b", streams.Event{Pos: p, Data: big})
	}
	st := m.Stats()
	if st.Bytes > 1500 || st.Dropped != 5 {
		t.Fatalf("stats %+v, want at most 1500 bytes and 5 dropped", st)
	}
	if _, err := m.Replay(ctx, "b", 0); err == nil {
		t.Error("b lost its oldest events, yet a replay from 0 opened")
	}
	m.Discard("a")
	if st := m.Stats(); st.Bytes != 500 || st.Streams != 1 {
		t.Fatalf("after Discard: %+v", st)
	}
}

package sse

import (
	"bytes"
	"io"
	"testing"
)

// BenchmarkReader splits a stream of progress-sized events.
func BenchmarkReader(b *testing.B) {
	ev := []byte("id: 17\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"p\",\"progress\":3}}\n\n")
	stream := bytes.Repeat(ev, 1000)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		r := NewReader(bytes.NewReader(stream), 0)
		for {
			if _, err := r.Next(); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
	}
}

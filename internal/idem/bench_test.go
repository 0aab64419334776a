package idem

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/store/redistest"
)

// benchClaimComplete measures the path of a first call: claim a fresh key, then record its result.
func benchClaimComplete(b *testing.B, s Store) {
	ctx, result := context.Background(), []byte(`{"content":[{"type":"text","text":"ok"}]}`)
	var n atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			key := Digest("bench", strconv.FormatInt(n.Add(1), 10))
			out, err := s.Claim(ctx, key, dg, time.Minute, Refuse)
			if err != nil || out.State != Claimed {
				b.Fatalf("Claim = %v, %v", out.State, err)
			}
			if err := s.Complete(ctx, key, out.Token, result, time.Minute); err != nil {
				b.Fatalf("Complete: %v", err)
			}
		}
	})
}

func BenchmarkMemoryClaimComplete(b *testing.B) {
	b.Run("fresh", func(b *testing.B) { benchClaimComplete(b, NewMemory(nil)) })
	b.Run("at cap", func(b *testing.B) { // every claim evicts a done record
		m := NewMemory(&MemoryOptions{MaxRecords: 1024})
		benchClaimComplete(b, m)
	})
}

func BenchmarkMemoryClaimDone(b *testing.B) {
	m, ctx := NewMemory(nil), context.Background()
	out, _ := m.Claim(ctx, "k", dg, time.Minute, Refuse)
	if err := m.Complete(ctx, "k", out.Token, []byte("result"), time.Hour); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if out, err := m.Claim(ctx, "k", dg, time.Minute, Refuse); err != nil || out.State != Done {
			b.Fatalf("Claim = %v, %v", out.State, err)
		}
	}
}

func BenchmarkRedisClaimComplete(b *testing.B) {
	benchClaimComplete(b, NewRedis(newRedisClient(b, redistest.Start(b)), "bench:", nil))
}

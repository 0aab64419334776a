package store

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/mcpfleet/mcpfleet/internal/store/redistest"
)

// TestRoundTripsCountExchangesNotCommands: a command is one round trip, a
// pipeline of three one, a script's first run two (EVALSHA, NOSCRIPT, then
// EVAL) and its next one, as the server's commandstats would not tell.
func TestRoundTripsCountExchangesNotCommands(t *testing.T) {
	addr := redistest.Start(t)
	c, err := NewClient(ModeSingle, "redis://"+addr, "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	// A new connection's handshake (HELLO, CLIENT SETINFO) is commands of
	// its own: open the connections (a command's, a pipeline's) before
	// counting.
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	warm := c.Pipeline()
	warm.Ping(ctx)
	if _, err := warm.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	script := redis.NewScript(`return redis.call('INCR', KEYS[1])`)
	steps := []struct {
		name string
		do   func() error
		want uint64
	}{
		{"one command", func() error { return c.Set(ctx, "mcpfleet:rt", "1", 0).Err() }, 1},
		{"a pipeline of three", func() error {
			p := c.Pipeline()
			p.Get(ctx, "mcpfleet:rt")
			p.Incr(ctx, "mcpfleet:rt")
			p.Get(ctx, "mcpfleet:rt")
			_, err := p.Exec(ctx)
			return err
		}, 1},
		{"a script not yet loaded", func() error { return script.Run(ctx, c, []string{"mcpfleet:rt"}).Err() }, 2},
		{"the script again", func() error { return script.Run(ctx, c, []string{"mcpfleet:rt"}).Err() }, 1},
	}
	for _, s := range steps {
		before := RoundTrips()
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := RoundTrips() - before; got != s.want {
			t.Errorf("%s: %d round trips counted, want %d", s.name, got, s.want)
		}
	}
}

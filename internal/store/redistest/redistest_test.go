package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// ping sends one PING to addr.
func ping(addr string) error {
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 500 * time.Millisecond, MaxRetries: -1})
	defer c.Close()
	return c.Ping(context.Background()).Err()
}

func TestStartAnswersAndStops(t *testing.T) {
	var addr string
	t.Run("server", func(t *testing.T) {
		addr = Start(t)
		if err := ping(addr); err != nil {
			t.Fatalf("PING %s: %v", addr, err)
		}
		if other := Start(t); other == addr {
			t.Errorf("two servers share %s", addr)
		}
	})
	if addr == "" {
		t.Skip("no server was started")
	}
	if err := ping(addr); err == nil {
		t.Errorf("%s still answers after its test ended", addr)
	}
}

package redistasks

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/session/tasktest"
	"github.com/mcpfleet/mcpfleet/internal/store"
	"github.com/mcpfleet/mcpfleet/internal/store/redistest"
	"github.com/mcpfleet/mcpfleet/internal/testproc"
)

func TestContract(t *testing.T) {
	client, err := store.NewRedisClient("redis://" + redistest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	tasktest.Contract(t, New(client, "test:task:"), true)
	keys, _ := client.Keys(context.Background(), "*").Result()
	for _, k := range keys {
		if strings.Contains(k, "t1") || strings.Contains(k, "xxx") || len(k) != len("test:task:")+64 {
			t.Errorf("key %q: want the prefix and a hex digest, never the task id", k)
		}
	}
}

func TestUnavailable(t *testing.T) {
	client, err := store.NewRedisClient("redis://" + testproc.FreeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	s := New(client, "x:")
	if _, _, err := s.Lookup(context.Background(), "t"); err == nil {
		t.Fatal("Lookup against no server succeeded")
	}
	if err := s.Remember(context.Background(), "t", "a", time.Second); err == nil {
		t.Fatal("Remember against no server succeeded")
	}
}

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

// TestClusterContract runs the contract on a real Redis Cluster.
func TestClusterContract(t *testing.T) {
	c := redistest.StartCluster(t)
	client, err := store.NewClient(store.ModeCluster, c.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	tasktest.Contract(t, New(client, "test:task:"), true)
}

// TestSentinelContract runs the contract against a primary that Redis
// Sentinel watches, then again through the same client after the
// sentinels have failed it over to its replica.
func TestSentinelContract(t *testing.T) {
	s := redistest.StartSentinel(t)
	client, err := store.NewClient(store.ModeSentinel, s.URL, redistest.SentinelMaster)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	for _, phase := range []string{"before failover", "after failover"} {
		if phase == "after failover" {
			if err := s.Failover(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := redistest.WaitPrimary(context.Background(), client); err != nil {
				t.Fatal(err)
			}
		}
		t.Run(phase, func(t *testing.T) {
			tasktest.Contract(t, New(client, "test:task:"+t.Name()+":"), true)
		})
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

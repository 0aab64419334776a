package store

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/store/redistest"
	"github.com/redis/go-redis/v9"
)

func TestNewRedisClientParsesURL(t *testing.T) {
	tests := []struct {
		url         string
		addr        string
		db          int
		tls         bool
		readTimeout time.Duration
	}{
		{"redis://localhost:6379", "localhost:6379", 0, false, DefaultReadTimeout},
		{"redis://:secret@valkey:6380/2", "valkey:6380", 2, false, DefaultReadTimeout},
		{"rediss://user:secret@valkey.internal:6380/0", "valkey.internal:6380", 0, true, DefaultReadTimeout},
		{"redis://valkey:6379/0?read_timeout=2s", "valkey:6379", 0, false, 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			c, err := NewRedisClient(tt.url)
			if err != nil {
				t.Fatalf("NewRedisClient: %v", err)
			}
			defer c.Close()
			o := c.(*redis.Client).Options()
			if o.Addr != tt.addr || o.DB != tt.db || (o.TLSConfig != nil) != tt.tls {
				t.Errorf("Addr, DB, TLS = %q, %d, %v; want %q, %d, %v", o.Addr, o.DB, o.TLSConfig != nil, tt.addr, tt.db, tt.tls)
			}
			if o.ReadTimeout != tt.readTimeout || o.DialTimeout != DefaultDialTimeout || o.WriteTimeout != DefaultWriteTimeout {
				t.Errorf("timeouts dial %v read %v write %v", o.DialTimeout, o.ReadTimeout, o.WriteTimeout)
			}
		})
	}
}

func TestNewRedisClientErrorsHideTheURL(t *testing.T) {
	for _, url := range []string{
		"",
		"http://:hunter2@valkey:6379",
		"redis://:hunter2@valkey:6379/notadb",
		"redis://:hunter2@val key:6379\x7f",
		"redis://:hunter2@valkey:6379/0?nonsense=1",
	} {
		_, err := NewRedisClient(url)
		if err == nil {
			t.Errorf("NewRedisClient(%q) succeeded, want an error", url)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("NewRedisClient(%q) error leaks the password: %v", url, err)
		}
	}
}

func TestNewRedisClientTalksToServer(t *testing.T) {
	c, err := NewRedisClient("redis://" + redistest.Start(t) + "/0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, err := c.Ping(context.Background()).Result(); err != nil || got != "PONG" {
		t.Errorf("Ping = %q, %v", got, err)
	}
}

package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// TaskStore is the registry of which replica runs each task, as the gateway
// uses it. Tasks keeps it in one process; RedisTasks in a Valkey or Redis
// server, so that tasks/* requests reach the right replica through any
// gateway process and across restarts. One contract covers both.
// Implementations are safe for concurrent use.
type TaskStore interface {
	// Remember records that replica runs task id for ttl (> 0).
	Remember(ctx context.Context, id, replica string, ttl time.Duration) error
	// Lookup returns the replica of task id, and false when the task is
	// unknown or its time is up.
	Lookup(ctx context.Context, id string) (replica string, ok bool, err error)
}

var (
	_ TaskStore = (*Tasks)(nil)
	_ TaskStore = (*RedisTasks)(nil)
)

// Remember implements TaskStore on the real clock.
func (t *Tasks) Remember(_ context.Context, id, replica string, ttl time.Duration) error {
	now := time.Now()
	t.Put(id, replica, now, now.Add(ttl))
	return nil
}

// Lookup implements TaskStore on the real clock.
func (t *Tasks) Lookup(_ context.Context, id string) (string, bool, error) {
	r, ok := t.Get(id, time.Now())
	return r, ok, nil
}

// RedisTasks is a TaskStore in a Valkey or Redis server: one string per
// task, prefix + the hex SHA-256 of the task ID (IDs are chosen by replicas
// and may be long or odd; none reaches a key name), holding the replica's
// name, with the task's TTL as its expiry (PX), by the server's clock.
type RedisTasks struct {
	client redis.UniversalClient
	prefix string
}

// NewRedisTasks returns a registry in client's server under keys starting
// with prefix (for example "mcpfleet:task:"). The caller closes client.
func NewRedisTasks(client redis.UniversalClient, prefix string) *RedisTasks {
	return &RedisTasks{client: client, prefix: prefix}
}

// Remember implements TaskStore.
func (s *RedisTasks) Remember(ctx context.Context, id, replica string, ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("remembering task: ttl %v is not positive", ttl)
	}
	if err := s.client.Set(ctx, s.key(id), replica, ttl).Err(); err != nil {
		return fmt.Errorf("remembering task: %w", err)
	}
	return nil
}

// Lookup implements TaskStore.
func (s *RedisTasks) Lookup(ctx context.Context, id string) (string, bool, error) {
	v, err := s.client.Get(ctx, s.key(id)).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("looking up task: %w", err)
	}
	return v, true, nil
}

func (s *RedisTasks) key(id string) string {
	sum := sha256.Sum256([]byte(id))
	return s.prefix + hex.EncodeToString(sum[:])
}

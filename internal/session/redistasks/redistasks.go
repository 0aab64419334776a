// Package redistasks keeps the gateway's task registry (which replica runs
// each 2026-07-28 task) in a Valkey or Redis server, so that tasks/*
// requests reach the right replica through any gateway process and across
// restarts. It is its own package so that session, and what imports it,
// brings no Redis client along.
package redistasks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/session"
	"github.com/redis/go-redis/v9"
)

var _ session.TaskStore = (*Store)(nil)

// Store is a session.TaskStore in a Valkey or Redis server: one string per
// task, prefix + the hex SHA-256 of the task ID (IDs are chosen by replicas
// and may be long or odd; none reaches a key name), holding the replica's
// name, with the task's TTL as its expiry (PX), by the server's clock.
type Store struct {
	client redis.UniversalClient
	prefix string
}

// New returns a registry in client's server under keys starting
// with prefix (for example "mcpfleet:task:"). The caller closes client.
func New(client redis.UniversalClient, prefix string) *Store {
	return &Store{client: client, prefix: prefix}
}

// Remember implements session.TaskStore.
func (s *Store) Remember(ctx context.Context, id, replica string, ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("remembering task: ttl %v is not positive", ttl)
	}
	if err := s.client.Set(ctx, s.key(id), replica, ttl).Err(); err != nil {
		return fmt.Errorf("remembering task: %w", err)
	}
	return nil
}

// Lookup implements session.TaskStore.
func (s *Store) Lookup(ctx context.Context, id string) (string, bool, error) {
	v, err := s.client.Get(ctx, s.key(id)).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("looking up task: %w", err)
	}
	return v, true, nil
}

func (s *Store) key(id string) string {
	sum := sha256.Sum256([]byte(id))
	return s.prefix + hex.EncodeToString(sum[:])
}

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
	"strings"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/session"
	"github.com/redis/go-redis/v9"
)

var _ session.TaskStore = (*Store)(nil)

// Store is a session.TaskStore in a Valkey or Redis server: one string per
// task, prefix + the hex SHA-256 of the task ID (IDs are chosen by replicas
// and may be long or odd; none reaches a key name), with the task's TTL as
// its expiry (PX), by the server's clock. The string is the replica's name
// for a task nobody opened, as before openers were kept, and a NUL byte,
// the opener's digest and the replica's name for one a caller opened.
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
func (s *Store) Remember(ctx context.Context, id string, t session.Task, ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("remembering task: ttl %v is not positive", ttl)
	}
	if strings.HasPrefix(t.Replica, boundMark) {
		return fmt.Errorf("remembering task: a replica name starts with a NUL byte")
	}
	v := []byte(t.Replica)
	if t.Opener.Bound() {
		v, _ = t.Opener.AppendBinary([]byte(boundMark))
		v = append(v, t.Replica...)
	}
	if err := s.client.Set(ctx, s.key(id), v, ttl).Err(); err != nil {
		return fmt.Errorf("remembering task: %w", err)
	}
	return nil
}

// Lookup implements session.TaskStore.
func (s *Store) Lookup(ctx context.Context, id string) (session.Task, bool, error) {
	v, err := s.client.Get(ctx, s.key(id)).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return session.Task{}, false, nil
	case err != nil:
		return session.Task{}, false, fmt.Errorf("looking up task: %w", err)
	}
	if !strings.HasPrefix(v, boundMark) {
		return session.Task{Replica: v}, true, nil
	}
	v = v[len(boundMark):]
	if len(v) <= session.OpenerLen {
		return session.Task{}, false, fmt.Errorf("looking up task: a record of %d bytes", len(v)+len(boundMark))
	}
	o, _ := session.ParseOpener([]byte(v[:session.OpenerLen]))
	return session.Task{Replica: v[session.OpenerLen:], Opener: o}, true, nil
}

// boundMark begins the record of a task a caller opened.
const boundMark = "\x00"

func (s *Store) key(id string) string {
	sum := sha256.Sum256([]byte(id))
	return s.prefix + hex.EncodeToString(sum[:])
}

package session

import (
	"context"
	"time"
)

// TaskStore is the registry of which replica runs each task, as the gateway
// uses it. Tasks keeps it in one process; package redistasks in a Valkey or
// Redis server, so that tasks/* requests reach the right replica through any
// gateway process and across restarts. One contract (package tasktest) covers both.
// Implementations are safe for concurrent use.
type TaskStore interface {
	// Remember records task t (its replica and opener) under id for ttl
	// (> 0).
	Remember(ctx context.Context, id string, t Task, ttl time.Duration) error
	// Lookup returns task id as remembered, and false when the task is
	// unknown or its time is up.
	Lookup(ctx context.Context, id string) (t Task, ok bool, err error)
}

var _ TaskStore = (*Tasks)(nil)

// Remember implements TaskStore on the real clock.
func (t *Tasks) Remember(_ context.Context, id string, task Task, ttl time.Duration) error {
	now := time.Now()
	t.Put(id, task, now, now.Add(ttl))
	return nil
}

// Lookup implements TaskStore on the real clock.
func (t *Tasks) Lookup(_ context.Context, id string) (Task, bool, error) {
	r, ok := t.Get(id, time.Now())
	return r, ok, nil
}

// Package session remembers which replica minted each legacy (2025-11-25)
// session, so that every request of a session reaches the replica that holds
// it.
package session

import (
	"sync"
	"time"
)

// Table maps session IDs to the name of the replica that minted them. It is
// safe for concurrent use. Time comes in as an argument, so idle expiry is
// testable and the simulator can drive it.
type Table struct {
	mu sync.Mutex // guards m
	m  map[string]entry
}

type entry struct {
	replica string
	seen    time.Time
}

// NewTable returns an empty table.
func NewTable() *Table { return &Table{m: make(map[string]entry)} }

// Put records that replica minted id.
func (t *Table) Put(id, replica string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.m[id] = entry{replica: replica, seen: now}
}

// Get returns the replica of session id and marks it used at now.
func (t *Table) Get(id string, now time.Time) (replica string, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.m[id]
	if !ok {
		return "", false
	}
	e.seen = now
	t.m[id] = e
	return e.replica, true
}

// Delete forgets session id (ended by DELETE, or unknown to its replica).
func (t *Table) Delete(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, id)
}

// Len returns the number of sessions remembered.
func (t *Table) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// Expire forgets sessions unused since before now-idle and returns how many.
// A forgotten session gets 404 on its next request and the client
// re-initializes, as it would if the replica had expired it.
func (t *Table) Expire(now time.Time, idle time.Duration) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for id, e := range t.m {
		if now.Sub(e.seen) > idle {
			delete(t.m, id)
			n++
		}
	}
	return n
}

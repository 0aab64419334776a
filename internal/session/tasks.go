package session

import (
	"sync"
	"time"
)

// Tasks remembers which replica holds each task of the 2026-07-28 tasks
// extension (SEP-2663): a tools/call answered with resultType "task" names
// the task, and every tasks/* request for it (Mcp-Name: the task id) must
// reach the replica that runs it. Entries expire with the task's TTL and the
// registry is bounded, so clients cannot grow it without end. Time comes in
// as an argument. It is safe for concurrent use.
type Tasks struct {
	max int

	mu sync.Mutex // guards m
	m  map[string]taskEntry
}

// Task is what the registry keeps of one task: the replica that runs it,
// and who created it (the zero Opener for nobody), whom alone its tasks/*
// requests are for.
type Task struct {
	Replica string
	Opener  Opener
}

type taskEntry struct {
	task    Task
	expires time.Time
}

// NewTasks returns a registry of at most max tasks (max <= 0 means 100,000).
func NewTasks(max int) *Tasks {
	if max <= 0 {
		max = 100_000
	}
	return &Tasks{max: max, m: make(map[string]taskEntry)}
}

// Put records task t under id until expires. When the registry is
// full it first forgets expired tasks, then, if it must, an arbitrary one:
// a forgotten task's requests are routed like any request, and the replica
// that does not know it says so.
func (t *Tasks) Put(id string, task Task, now, expires time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.m[id]; !ok && len(t.m) >= t.max {
		t.expireLocked(now)
		for k := range t.m {
			if len(t.m) < t.max {
				break
			}
			delete(t.m, k)
		}
	}
	t.m[id] = taskEntry{task: task, expires: expires}
}

// Get returns task id, if known and not expired at now.
func (t *Tasks) Get(id string, now time.Time) (Task, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.m[id]
	if !ok {
		return Task{}, false
	}
	if now.After(e.expires) {
		delete(t.m, id)
		return Task{}, false
	}
	return e.task, true
}

// Len returns the number of tasks remembered.
func (t *Tasks) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

func (t *Tasks) expireLocked(now time.Time) {
	for k, e := range t.m {
		if now.After(e.expires) {
			delete(t.m, k)
		}
	}
}

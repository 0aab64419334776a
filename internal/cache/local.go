package cache

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// Defaults of the local store.
const (
	DefaultMaxBytes      = 64 << 20
	DefaultMaxEntryBytes = 1 << 20
	// maxGens bounds the generations remembered; past it the store starts
	// over empty, which loses entries but never revives a stale one.
	maxGens = 100_000
)

// Local is a Store in this process's memory: least recently used entries
// go first once the values held pass maxBytes, and no entry is over
// maxEntry. Each gateway process has its own, so the hit rate falls as
// gateways multiply; share one in Redis instead.
type Local struct {
	now                func() time.Time
	maxBytes, maxEntry int

	mu    sync.Mutex // guards the rest
	bytes int
	lru   *list.List // of *localEntry, most recent at the front
	byKey map[string]*list.Element
	gens  map[string]uint64
	epoch uint64 // counts fresh starts; part of every generation given out
}

type localEntry struct {
	key     string
	gen     string
	seen    uint64
	value   []byte
	expires time.Time
}

var _ Store = (*Local)(nil)

// NewLocal returns a local store of at most maxBytes of values (0 means
// DefaultMaxBytes), none over maxEntry (0 means DefaultMaxEntryBytes).
func NewLocal(maxBytes, maxEntry int) *Local { return NewLocalAt(maxBytes, maxEntry, time.Now) }

// NewLocalAt is NewLocal on the clock now, for tests that move time.
func NewLocalAt(maxBytes, maxEntry int, now func() time.Time) *Local {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	if maxEntry <= 0 {
		maxEntry = DefaultMaxEntryBytes
	}
	return &Local{now: now, maxBytes: maxBytes, maxEntry: min(maxEntry, maxBytes),
		lru: list.New(), byKey: map[string]*list.Element{}, gens: map[string]uint64{}}
}

// Get implements Store.
func (s *Local) Get(_ context.Context, gen string, keys ...string) (Hit, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	h := Hit{Gen: s.genLocked(gen)}
	for i, k := range keys {
		el, ok := s.byKey[k]
		if !ok {
			continue
		}
		e := el.Value.(*localEntry)
		if !now.Before(e.expires) || e.seen != s.genLocked(e.gen) {
			s.removeLocked(el)
			continue
		}
		s.lru.MoveToFront(el)
		return Hit{Found: true, Index: i, Value: e.value, Remaining: e.expires.Sub(now), Gen: h.Gen}, nil
	}
	return h, nil
}

// Set implements Store.
func (s *Local) Set(_ context.Context, gen string, seen uint64, key string, value []byte, ttl time.Duration) error {
	if len(value) > s.maxEntry || ttl <= 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.genLocked(gen) != seen {
		return nil
	}
	if el, ok := s.byKey[key]; ok {
		s.removeLocked(el)
	}
	e := &localEntry{key: key, gen: gen, seen: seen, value: value, expires: s.now().Add(ttl)}
	s.byKey[key] = s.lru.PushFront(e)
	s.bytes += len(value)
	for s.bytes > s.maxBytes {
		s.removeLocked(s.lru.Back())
	}
	return nil
}

// Invalidate implements Store.
func (s *Local) Invalidate(_ context.Context, gen string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.gens[gen]; !ok && len(s.gens) >= maxGens {
		// Start over: dropping every entry, and a new epoch so that no
		// generation seen before matches again, is the only safe way to
		// forget generations.
		s.lru.Init()
		clear(s.byKey)
		clear(s.gens)
		s.bytes = 0
		s.epoch++
		return nil
	}
	s.gens[gen]++
	return nil
}

// Bytes returns the bytes of values held.
func (s *Local) Bytes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes
}

// genLocked is gen's current generation, epoch included.
func (s *Local) genLocked(gen string) uint64 { return s.epoch<<40 | s.gens[gen] }

func (s *Local) removeLocked(el *list.Element) {
	e := s.lru.Remove(el).(*localEntry)
	delete(s.byKey, e.key)
	s.bytes -= len(e.value)
}

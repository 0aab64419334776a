package idem

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Defaults for MemoryOptions fields left zero.
const (
	DefaultMaxRecords = 100_000
	DefaultMaxBytes   = 64 << 20
)

// MemoryOptions configures a Memory store. The zero value (or nil) means defaults.
type MemoryOptions struct {
	// Now returns the current time; leases and TTLs are measured with it. Nil means time.Now.
	// Tests pass a fake clock. Waiters blocked in Wait also sleep on a real timer for the rest of
	// the lease, so with a fake clock they notice an expiry on their next wake-up, not at once.
	Now func() time.Time
	// MaxResult is the largest result recorded, in bytes. Zero means DefaultMaxResult.
	MaxResult int
	// MaxRecords caps the records kept, running and done. Zero means DefaultMaxRecords. When
	// full, expired records go first, then the done record closest to expiry; when every record
	// is a running claim, Claim fails with ErrUnavailable.
	MaxRecords int
	// MaxBytes caps the bytes of results kept; done records closest to expiry are evicted to
	// stay under it. Zero means DefaultMaxBytes. It must be at least MaxResult.
	MaxBytes int
}

// Validate reports options that cannot work.
func (o *MemoryOptions) Validate() error {
	if o == nil {
		return nil
	}
	if o.MaxResult < 0 || o.MaxRecords < 0 || o.MaxBytes < 0 {
		return errors.New("validating memory idempotency options: negative limit")
	}
	maxResult, maxBytes := o.MaxResult, o.MaxBytes
	if maxResult == 0 {
		maxResult = DefaultMaxResult
	}
	if maxBytes == 0 {
		maxBytes = DefaultMaxBytes
	}
	if maxBytes < maxResult {
		return fmt.Errorf("validating memory idempotency options: MaxBytes %d below MaxResult %d", maxBytes, maxResult)
	}
	return nil
}

// Memory is a Store held in this process, for a gateway running as one replica (replicas do not
// see each other's records). Waiters are woken by channels the moment a claim ends.
type Memory struct {
	now        func() time.Time
	maxResult  int
	maxRecords int
	maxBytes   int

	mu      sync.Mutex
	records map[string]*record // guarded by mu; every record is in exactly one heap below
	running recordHeap         // guarded by mu; running claims by lease end
	done    recordHeap         // guarded by mu; recorded results by TTL end
	bytes   int                // guarded by mu; sum of len(result) over done
}

var _ Store = (*Memory)(nil)

// record is one key's state in a Memory store.
type record struct {
	key     string
	digest  string // the request's that made it
	reused  bool   // a request with another digest has met it, or one it replaced
	done    bool
	token   string        // the claim's token while running
	result  []byte        // the result once done
	expires time.Time     // lease end while running, TTL end once done
	wake    chan struct{} // closed when the running claim ends; nil once done
	index   int           // position in its heap
}

// NewMemory returns an empty Memory store. It panics if opts fail Validate, a programming error.
func NewMemory(opts *MemoryOptions) *Memory {
	if err := opts.Validate(); err != nil {
		panic(err)
	}
	var o MemoryOptions
	if opts != nil {
		o = *opts
	}
	m := &Memory{
		now:        o.Now,
		maxResult:  o.MaxResult,
		maxRecords: o.MaxRecords,
		maxBytes:   o.MaxBytes,
		records:    make(map[string]*record),
	}
	if m.now == nil {
		m.now = time.Now
	}
	if m.maxResult == 0 {
		m.maxResult = DefaultMaxResult
	}
	if m.maxRecords == 0 {
		m.maxRecords = DefaultMaxRecords
	}
	if m.maxBytes == 0 {
		m.maxBytes = DefaultMaxBytes
	}
	return m
}

// Len returns the number of records held, expired ones not yet swept included.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.records)
}

// Claim implements Store.
func (m *Memory) Claim(ctx context.Context, key, digest string, lease time.Duration, reuse Reuse) (Outcome, error) {
	if err := errors.Join(checkKey(key), checkDigest(digest), checkDuration("lease", lease)); err != nil {
		return Outcome{}, err
	}
	if err := ctxErr(ctx, "claiming idempotency key"); err != nil {
		return Outcome{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	var out Outcome
	if r := m.lookupLocked(key, now); r != nil {
		switch {
		case r.digest == digest && r.done:
			return Outcome{State: Done, Result: clone(r.result)}, nil
		case r.digest == digest:
			return Outcome{State: Running}, nil
		}
		out.Reused, out.FirstReuse = true, !r.reused
		r.reused = true
		if !r.done || reuse != Replace {
			out.State = Mismatch
			return out, nil
		}
		m.removeLocked(r)
	}
	if err := m.makeRoomLocked(now); err != nil {
		return Outcome{}, err
	}
	r := &record{key: key, digest: digest, reused: out.Reused, token: newToken(), expires: now.Add(lease), wake: make(chan struct{})}
	m.records[key] = r
	heap.Push(&m.running, r)
	out.State, out.Token = Claimed, r.token
	return out, nil
}

// Complete implements Store.
func (m *Memory) Complete(ctx context.Context, key, token string, result []byte, ttl time.Duration) error {
	if err := errors.Join(checkKey(key), checkDuration("ttl", ttl)); err != nil {
		return err
	}
	if err := ctxErr(ctx, "completing idempotency key"); err != nil {
		return err
	}
	if err := checkResult(result, m.maxResult); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	r, err := m.ownedLocked(key, token, now)
	if err != nil {
		return err
	}
	for m.bytes+len(result) > m.maxBytes && m.done.Len() > 0 {
		m.removeLocked(m.done[0])
	}
	heap.Remove(&m.running, r.index)
	r.done, r.token, r.result, r.expires = true, "", clone(result), now.Add(ttl)
	heap.Push(&m.done, r)
	m.bytes += len(r.result)
	close(r.wake)
	r.wake = nil
	return nil
}

// Release implements Store.
func (m *Memory) Release(ctx context.Context, key, token string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := ctxErr(ctx, "releasing idempotency key"); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.ownedLocked(key, token, m.now())
	if err != nil {
		return err
	}
	m.removeLocked(r)
	return nil
}

// Wait implements Store. It wakes when the claim ends, when its lease runs out by a real timer,
// or when ctx ends.
func (m *Memory) Wait(ctx context.Context, key, digest string) (Outcome, error) {
	if err := errors.Join(checkKey(key), checkDigest(digest)); err != nil {
		return Outcome{}, err
	}
	for {
		m.mu.Lock()
		r := m.lookupLocked(key, m.now())
		if r == nil || r.digest != digest {
			m.mu.Unlock()
			return Outcome{State: Released}, nil
		}
		if r.done {
			out := Outcome{State: Done, Result: clone(r.result)}
			m.mu.Unlock()
			return out, nil
		}
		wake, expires := r.wake, r.expires
		m.mu.Unlock()

		timer := time.NewTimer(expires.Sub(m.now()))
		select {
		case <-wake:
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return Outcome{}, fmt.Errorf("waiting for idempotency key: %w", ctx.Err())
		}
		timer.Stop()
	}
}

// lookupLocked returns key's live record, removing it if it has expired.
func (m *Memory) lookupLocked(key string, now time.Time) *record {
	r := m.records[key]
	if r != nil && !now.Before(r.expires) {
		m.removeLocked(r)
		return nil
	}
	return r
}

// ownedLocked returns key's running record if token holds it.
func (m *Memory) ownedLocked(key, token string, now time.Time) (*record, error) {
	r := m.lookupLocked(key, now)
	if r == nil || r.done || token == "" || r.token != token {
		return nil, ErrNotOwner
	}
	return r, nil
}

// makeRoomLocked frees a slot for one more record, or reports ErrUnavailable.
func (m *Memory) makeRoomLocked(now time.Time) error {
	if len(m.records) < m.maxRecords {
		return nil
	}
	for _, h := range []*recordHeap{&m.running, &m.done} {
		for h.Len() > 0 && !now.Before((*h)[0].expires) {
			m.removeLocked((*h)[0])
		}
	}
	if len(m.records) < m.maxRecords {
		return nil
	}
	if m.done.Len() == 0 {
		return fmt.Errorf("%w: memory store holds %d running claims", ErrUnavailable, len(m.records))
	}
	m.removeLocked(m.done[0])
	return nil
}

// removeLocked drops r from the store and wakes its waiters.
func (m *Memory) removeLocked(r *record) {
	delete(m.records, r.key)
	if r.done {
		heap.Remove(&m.done, r.index)
		m.bytes -= len(r.result)
		return
	}
	heap.Remove(&m.running, r.index)
	close(r.wake)
	r.wake = nil
}

// clone copies b; the copy is never nil, so a recorded empty result reads as empty, not absent.
func clone(b []byte) []byte {
	return append(make([]byte, 0, len(b)), b...)
}

// recordHeap orders records by expiry, soonest first (container/heap).
type recordHeap []*record

func (h recordHeap) Len() int           { return len(h) }
func (h recordHeap) Less(i, j int) bool { return h[i].expires.Before(h[j].expires) }
func (h recordHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *recordHeap) Push(x any) {
	r := x.(*record)
	r.index = len(*h)
	*h = append(*h, r)
}
func (h *recordHeap) Pop() any {
	old := *h
	r := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return r
}

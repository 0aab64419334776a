package limit

import (
	"context"
	"strconv"
	"sync"
	"time"
)

// Memory is a Store in this process's memory: a Table behind a mutex, on the
// real clock. Gateways that each use their own Memory each keep their own
// limits, so N of them let a caller through N times over; share a Redis
// store instead.
type Memory struct {
	now func() time.Time

	mu sync.Mutex // guards t
	t  *Table
}

var _ Store = (*Memory)(nil)

// NewMemory returns a memory store of at most maxCallers callers (0 means
// DefaultMaxCallers).
func NewMemory(maxCallers int) *Memory { return NewMemoryAt(maxCallers, time.Now) }

// NewMemoryAt is NewMemory on the clock now, for tests that move time.
func NewMemoryAt(maxCallers int, now func() time.Time) *Memory {
	return &Memory{now: now, t: NewTable(maxCallers)}
}

// Acquire implements Store.
func (m *Memory) Acquire(ctx context.Context, caller, tool string, c Check) (Decision, Lease, error) {
	if err := c.Validate(); err != nil {
		return Decision{}, Lease{}, err
	}
	if err := ctx.Err(); err != nil {
		return Decision{}, Lease{}, err
	}
	m.mu.Lock()
	d, id := m.t.Acquire(caller, tool, c, m.now())
	m.mu.Unlock()
	var l Lease
	if id != 0 {
		l = Lease{Caller: caller, Tool: tool, ID: strconv.FormatUint(uint64(id), 10)}
	}
	return d, l, nil
}

// AcquireBatch implements Store.
func (m *Memory) AcquireBatch(ctx context.Context, caller string, calls []Call, c Check) (Decision, []Lease, error) {
	if err := c.Validate(); err != nil {
		return Decision{}, nil, err
	}
	if err := ctx.Err(); err != nil {
		return Decision{}, nil, err
	}
	ids := make([]LeaseID, len(calls))
	m.mu.Lock()
	d := m.t.AcquireBatch(caller, calls, c, m.now(), ids)
	m.mu.Unlock()
	if !d.Allowed {
		return d, nil, nil
	}
	leases := make([]Lease, len(calls))
	for i, id := range ids {
		if id != 0 {
			leases[i] = Lease{Caller: caller, Tool: calls[i].Tool, ID: strconv.FormatUint(uint64(id), 10)}
		}
	}
	return d, leases, nil
}

// Renew implements Store.
func (m *Memory) Renew(_ context.Context, leases []Lease, c Check) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	for _, l := range leases {
		m.t.Renew(l.Caller, l.Tool, leaseID(l), c.LeaseTTL, now)
	}
	return nil
}

// Release implements Store.
func (m *Memory) Release(_ context.Context, l Lease) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.t.Release(l.Caller, l.Tool, leaseID(l))
	return nil
}

// Callers returns how many callers the store remembers.
func (m *Memory) Callers() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.t.Callers()
}

func leaseID(l Lease) LeaseID {
	id, _ := strconv.ParseUint(l.ID, 10, 64)
	return LeaseID(id)
}

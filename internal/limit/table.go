package limit

import "time"

// DefaultMaxCallers bounds a Table's callers unless told otherwise.
const DefaultMaxCallers = 100_000

// LeaseID names a lease in a Table.
type LeaseID uint64

// Table keeps buckets and leases for many callers and tools in one process.
// It is the memory store's core and what the simulator drives: time comes in
// as an argument and nothing here does I/O. It is bounded: past max callers
// it forgets callers that hold no lease, which can only forgive them tokens.
// It is not safe for concurrent use (Memory adds the lock).
type Table struct {
	max     int
	callers map[string]*callerState
	tools   map[string]leaseSet
	next    LeaseID
}

type callerState struct {
	bucket Bucket
	full   time.Time // when the bucket is full again (forgetting it then loses nothing)
	leases leaseSet
}

// leaseSet maps a lease to its expiry.
type leaseSet map[LeaseID]time.Time

// NewTable returns a table of at most maxCallers callers (0 means
// DefaultMaxCallers).
func NewTable(maxCallers int) *Table {
	if maxCallers <= 0 {
		maxCallers = DefaultMaxCallers
	}
	return &Table{max: maxCallers, callers: make(map[string]*callerState), tools: make(map[string]leaseSet)}
}

// Acquire decides a call of caller (and of tool, when c.ToolCap applies) at
// now and, if it is allowed and a lease applies, takes one lease expiring at
// now+c.LeaseTTL. The returned ID is 0 when no lease was taken.
func (t *Table) Acquire(caller, tool string, c Check, now time.Time) (Decision, LeaseID) {
	calls := [1]Call{{Tool: tool, Cap: c.ToolCap}}
	var ids [1]LeaseID
	d := t.AcquireBatch(caller, calls[:], c, now, ids[:])
	return d, ids[0]
}

// AcquireBatch decides calls of caller at once, all or none (DecideBatch;
// each call's tool cap is its own, c.ToolCap is not read), and if they are
// allowed takes each call's lease, where one applies, into ids (as long as
// calls; 0 where no lease was taken).
func (t *Table) AcquireBatch(caller string, calls []Call, c Check, now time.Time, ids []LeaseID) Decision {
	cs := t.callers[caller]
	if cs == nil {
		t.makeRoom(now)
		cs = &callerState{}
	}
	var st State
	st.Bucket = cs.bucket
	if c.Concurrency > 0 {
		st.Caller = cs.leases.live(now)
	}
	var buf [4]ToolWant
	wants := buf[:0]
	for i, call := range calls {
		if call.Cap <= 0 || toolSeen(calls[:i], call.Tool) {
			continue
		}
		w := ToolWant{Cap: call.Cap, Leases: t.tools[call.Tool].live(now)}
		for _, other := range calls[i:] {
			if other.Cap > 0 && other.Tool == call.Tool {
				w.Calls++
			}
		}
		wants = append(wants, w)
	}
	d := DecideBatch(c, len(calls), st, wants, now)
	if c.Rate > 0 {
		cs.bucket = d.Bucket
		cs.full = now.Add(time.Duration((c.Burst - d.Bucket.Tokens) / c.Rate * float64(time.Second)))
	}
	if d.Allowed {
		for i, call := range calls {
			ids[i] = t.take(cs, call, c, now)
		}
	}
	if c.Rate > 0 || len(cs.leases) > 0 {
		t.callers[caller] = cs
	}
	return d
}

// toolSeen reports whether a capped call of tool is among calls.
func toolSeen(calls []Call, tool string) bool {
	for _, c := range calls {
		if c.Cap > 0 && c.Tool == tool {
			return true
		}
	}
	return false
}

// take gives an allowed call its lease, in its caller's set under a
// concurrency limit and in its tool's under a cap; 0 when neither applies.
func (t *Table) take(cs *callerState, call Call, c Check, now time.Time) LeaseID {
	if c.Concurrency <= 0 && call.Cap <= 0 {
		return 0
	}
	t.next++
	id := t.next
	exp := now.Add(c.LeaseTTL)
	if c.Concurrency > 0 {
		if cs.leases == nil {
			cs.leases = make(leaseSet)
		}
		cs.leases[id] = exp
	}
	if call.Cap > 0 {
		ts := t.tools[call.Tool]
		if ts == nil {
			ts = make(leaseSet)
			t.tools[call.Tool] = ts
		}
		ts[id] = exp
	}
	return id
}

// Renew moves the expiry of lease id, held by caller (and tool), to
// now+ttl. A lease that lapsed or was released stays gone: a renewal that
// crosses a release must not take the slot again.
func (t *Table) Renew(caller, tool string, id LeaseID, ttl time.Duration, now time.Time) {
	exp := now.Add(ttl)
	if cs := t.callers[caller]; cs != nil {
		if _, ok := cs.leases[id]; ok {
			cs.leases[id] = exp
		}
	}
	if _, ok := t.tools[tool][id]; ok {
		t.tools[tool][id] = exp
	}
}

// Release drops lease id of caller and tool; releasing twice is harmless.
func (t *Table) Release(caller, tool string, id LeaseID) {
	if id == 0 {
		return
	}
	if cs := t.callers[caller]; cs != nil {
		delete(cs.leases, id)
	}
	if ts := t.tools[tool]; ts != nil {
		delete(ts, id)
		if len(ts) == 0 {
			delete(t.tools, tool)
		}
	}
}

// Callers returns how many callers the table remembers.
func (t *Table) Callers() int { return len(t.callers) }

// makeRoom forgets callers until one more fits: first those whose expired
// leases leave them nothing and whose bucket is full again by now (nothing
// is lost), then any that holds no live lease.
func (t *Table) makeRoom(now time.Time) {
	if len(t.callers) < t.max {
		return
	}
	for k, cs := range t.callers {
		cs.leases.expire(now)
		if len(cs.leases) == 0 && !cs.full.After(now) {
			delete(t.callers, k)
		}
	}
	for k, cs := range t.callers {
		if len(t.callers) < t.max {
			return
		}
		if len(cs.leases) == 0 {
			delete(t.callers, k)
		}
	}
}

// live counts the leases that have not expired at now, and forgets the
// others.
func (s leaseSet) live(now time.Time) Leases {
	var l Leases
	for id, exp := range s {
		if !exp.After(now) {
			delete(s, id)
			continue
		}
		l.Live++
		if l.Earliest.IsZero() || exp.Before(l.Earliest) {
			l.Earliest = exp
		}
	}
	return l
}

// expire drops the leases expired at now.
func (s leaseSet) expire(now time.Time) {
	for id, exp := range s {
		if !exp.After(now) {
			delete(s, id)
		}
	}
}

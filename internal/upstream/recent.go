package upstream

import (
	"sync"
	"time"
)

// RecentLen is how many of its last checks and failures a replica keeps
// for the fleet view's detail (GET /api/fleet: checks, recent_errors).
const RecentLen = 10

// The outcomes of a Failure, named as the access log names them.
const (
	// OutcomeError is a 5xx answer from the replica.
	OutcomeError = "upstream_error"
	// OutcomeCut is a stream the replica cut before its last event.
	OutcomeCut = "upstream_cut"
	// OutcomeConnect is a request that never reached the replica: the
	// connection to it failed.
	OutcomeConnect = "connect_failed"
)

// Failure is one request the replica failed, as the gateway saw it. It
// holds no header value, no session ID and no credential.
type Failure struct {
	At time.Time
	// Outcome is OutcomeError, OutcomeCut or OutcomeConnect.
	Outcome string
	// Method is the request's JSON-RPC method as metrics name it; "" when
	// not known.
	Method string
	// Status is the replica's HTTP status; 0 when it gave none.
	Status int
}

// recent keeps the last RecentLen values added. It takes its mutex only
// on the paths that add (a check, a failed request) and when read: a
// request that succeeds never touches it.
type recent[T any] struct {
	mu   sync.Mutex // guards buf and next
	buf  []T
	next int // where the next value goes: just after the newest
}

func (q *recent[T]) add(v T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.buf) < RecentLen {
		q.buf = append(q.buf, v)
	} else {
		q.buf[q.next] = v
	}
	q.next = (q.next + 1) % RecentLen
}

// newestFirst returns a copy of the values kept, the last added first.
func (q *recent[T]) newestFirst() []T {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]T, 0, len(q.buf))
	n := len(q.buf)
	for i := range n {
		out = append(out, q.buf[(q.next-1-i+2*n)%n])
	}
	return out
}

// Failed keeps f among the replica's recent failures.
func (r *Replica) Failed(f Failure) { r.stats.failures.add(f) }

// RecentFailures returns the replica's last RecentLen failures, newest
// first.
func (r *Replica) RecentFailures() []Failure { return r.stats.failures.newestFirst() }

// RecentChecks returns the replica's last RecentLen active checks, newest
// first; LastCheck is the first of them.
func (r *Replica) RecentChecks() []Check { return r.stats.checks.newestFirst() }

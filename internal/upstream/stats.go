package upstream

import (
	"hash/maphash"
	"sync/atomic"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/window"
)

// stats are a replica's figures for the fleet view (GET /api/fleet): every
// field is an atomic or lock-free, since every request touches them.
type stats struct {
	requests atomic.Uint64
	errors   atomic.Uint64
	retries  atomic.Uint64
	streams  atomic.Int64
	latency  window.Latency
	sessions window.Distinct
	// held is set while an operator has drained the replica by hand
	// (POST /api/replicas/{name}/drain): it takes no new work whatever
	// its health says.
	held atomic.Bool
	// quarantined is set while the replica's tools break the lock
	// (tools.on_unlocked: quarantine): it takes no new work, and its
	// sessions are told they are gone.
	quarantined atomic.Bool
	lastCheck   atomic.Pointer[Check]
	// checks and failures are the last few of each, for the fleet view's
	// detail of the replica (recent.go).
	checks   recent[Check]
	failures recent[Failure]
}

// Check is the outcome of a replica's last active health check.
type Check struct {
	At     time.Time
	Result Result
	// Reason says why a check failed; "" when it passed. It holds no
	// header value.
	Reason string
}

// Stats is a replica's figures at one moment.
type Stats struct {
	// Requests and Errors count the requests forwarded to the replica
	// since the gateway started, and those of them that failed there (a
	// 5xx answer, or a stream the replica cut).
	Requests, Errors uint64
	// Retries counts requests moved from the replica to another one.
	Retries uint64
	// Streams is the SSE streams being relayed from the replica now.
	Streams int64
	// P50 and P99 are the median and 99th percentile of the time to the
	// end of an answer over the last minute, LatencyN how many answers
	// they cover.
	P50, P99 time.Duration
	LatencyN uint64
	// Sessions estimates the 2025-11-25 sessions of the replica that had
	// a request through this gateway in the last 5 to 10 minutes.
	Sessions int
}

// sessionSeed seeds the hashes of session IDs the replicas' Distinct
// estimates count: per process, so nothing of an ID can be read back.
var sessionSeed = maphash.MakeSeed()

// Finished counts a request the replica answered, that took d and ended at
// now; failed says the replica failed it.
func (r *Replica) Finished(now time.Time, d time.Duration, failed bool) {
	r.stats.requests.Add(1)
	if failed {
		r.stats.errors.Add(1)
	}
	r.stats.latency.Observe(now, d)
}

// Retried counts a request moved from the replica to another one.
func (r *Replica) Retried() { r.stats.retries.Add(1) }

// StreamOpened counts an SSE stream relayed from the replica;
// StreamClosed counts it out.
func (r *Replica) StreamOpened() { r.stats.streams.Add(1) }

// StreamClosed counts out a stream; see StreamOpened.
func (r *Replica) StreamClosed() { r.stats.streams.Add(-1) }

// SawSession counts a request of the replica's session id (its own ID, not
// the sealed one) at now.
func (r *Replica) SawSession(now time.Time, id string) {
	r.stats.sessions.Add(now, maphash.String(sessionSeed, id))
}

// Stats returns the replica's figures at now.
func (r *Replica) Stats(now time.Time) Stats {
	qs, n := r.stats.latency.Quantiles(now, 0.5, 0.99)
	return Stats{
		Requests: r.stats.requests.Load(),
		Errors:   r.stats.errors.Load(),
		Retries:  r.stats.retries.Load(),
		Streams:  r.stats.streams.Load(),
		P50:      qs[0],
		P99:      qs[1],
		LatencyN: n,
		Sessions: r.stats.sessions.Estimate(now),
	}
}

// SetHeld drains the replica by hand (held) or gives it back to its
// health (not held), and reports whether that changed anything. A held
// replica takes no new work; the sessions and calls it has go on.
func (r *Replica) SetHeld(held bool) bool { return r.stats.held.Swap(held) != held }

// Held reports whether the replica is drained by hand.
func (r *Replica) Held() bool { return r.stats.held.Load() }

// Leaving reports whether the replica is on its way out: draining by its
// own word or held by hand. Such a replica may close its kept-alive
// connections at any moment, so the forwarding path sends it requests on
// connections of their own, never on one it may be closing.
func (r *Replica) Leaving() bool { return r.State() == StateDraining || r.Held() }

// SetQuarantined takes the replica out of all new work (its tools break
// the lock) or gives it back, and reports whether that changed anything.
func (r *Replica) SetQuarantined(q bool) bool { return r.stats.quarantined.Swap(q) != q }

// Quarantined reports whether the replica is quarantined.
func (r *Replica) Quarantined() bool { return r.stats.quarantined.Load() }

// LastCheck returns the replica's last active check; nil before the first.
func (r *Replica) LastCheck() *Check { return r.stats.lastCheck.Load() }

// Status returns the replica's health state and the streak that may move
// it next.
func (r *Replica) Status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status
}

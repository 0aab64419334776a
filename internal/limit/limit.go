// Package limit decides whether a caller's call may go now: a token bucket
// per caller (rate and burst), a concurrency limit per caller (calls in
// flight) and a fleet-wide cap per tool (calls of that tool in flight).
//
// The decision is pure (Decide: state, settings and now in; decision and the
// new bucket out). Table keeps that state for many callers in one process and
// is what the simulator drives; Memory is a Table behind a mutex and the real
// clock, for one gateway process; Redis keeps the same state in a Valkey or
// Redis server shared by every gateway, one Lua script per decision that
// mirrors Decide and reads the server's own clock (TIME). One contract suite
// runs both stores against a real redis-server and requires the same
// decisions.
//
// A call that is admitted holds leases (one in its caller's set, one in its
// tool's set) until it ends. Leases are sorted-set members scored by their
// expiry, renewed while the call runs (Limiter does this) and released at its
// end, so a gateway that dies mid-call frees its slots within the lease TTL.
//
// Callers are named by a salted digest (the gateway's routing keyer over the
// credential itself), never by a raw credential or by unverified token
// claims, so nobody can spend another caller's budget by naming them.
package limit

import (
	"fmt"
	"math"
	"time"
)

// Reason says which limit refused a call.
type Reason uint8

// The reasons. The zero Reason means nothing refused.
const (
	ReasonNone Reason = iota
	// ReasonRate: the caller's token bucket is empty.
	ReasonRate
	// ReasonConcurrency: the caller has as many calls in flight as allowed.
	ReasonConcurrency
	// ReasonTool: the tool has as many calls in flight fleet-wide as allowed.
	ReasonTool
)

// String returns "rate", "concurrency", "tool", or "none".
func (r Reason) String() string {
	switch r {
	case ReasonRate:
		return "rate"
	case ReasonConcurrency:
		return "concurrency"
	case ReasonTool:
		return "tool"
	}
	return "none"
}

// BusyRetry is the retry hint of a concurrency or tool refusal. A slot frees
// when some call in flight ends, which nobody can know in advance; the hint
// is this short poll, or sooner when the earliest lease in the way lapses
// (its gateway is gone and stopped renewing it).
const BusyRetry = 250 * time.Millisecond

// Check is what one call is checked against. A zero field turns its limit off.
type Check struct {
	// Rate is the caller's refill rate, in calls per second.
	Rate float64
	// Burst is the bucket's capacity, in calls; with Rate > 0 it is at least 1.
	Burst float64
	// Concurrency is how many calls the caller may have in flight.
	Concurrency int
	// ToolCap is how many calls of the call's tool may be in flight, fleet-wide.
	ToolCap int
	// LeaseTTL is how long a lease lives unless renewed.
	LeaseTTL time.Duration
}

// Validate reports a check that cannot be decided.
func (c Check) Validate() error {
	switch {
	case math.IsNaN(c.Rate) || c.Rate < 0 || math.IsInf(c.Rate, 0):
		return fmt.Errorf("checking limits: rate %v: must be a non-negative number", c.Rate)
	case c.Rate > 0 && !(c.Burst >= 1) || math.IsInf(c.Burst, 0):
		return fmt.Errorf("checking limits: burst %v: must be at least 1 with a rate", c.Burst)
	case c.Concurrency < 0 || c.ToolCap < 0:
		return fmt.Errorf("checking limits: concurrency %d, tool cap %d: must not be negative", c.Concurrency, c.ToolCap)
	case (c.Concurrency > 0 || c.ToolCap > 0) && c.LeaseTTL <= 0:
		return fmt.Errorf("checking limits: lease ttl %v: must be positive", c.LeaseTTL)
	}
	return nil
}

// TakesLease reports whether an admitted call takes any lease.
func (c Check) TakesLease() bool { return c.Concurrency > 0 || c.ToolCap > 0 }

// Bucket is a token bucket's stored state.
type Bucket struct {
	// Tokens is the bucket's content at At.
	Tokens float64
	// At is when Tokens was computed; the zero time means a bucket never
	// used, which is full.
	At time.Time
}

// Leases is what a decision needs to know of one lease set at now.
type Leases struct {
	// Live counts the leases that have not expired.
	Live int
	// Earliest is the earliest expiry among them (zero when Live is 0).
	Earliest time.Time
}

// State is a caller's and a tool's state as a decision reads it.
type State struct {
	Bucket Bucket
	Caller Leases // the caller's calls in flight
	Tool   Leases // the tool's calls in flight, fleet-wide
}

// Decision is the outcome of one check.
type Decision struct {
	// Allowed reports the call may go; it then holds a lease wherever a
	// concurrency limit or a tool cap applies.
	Allowed bool
	// Reason is the limit that refused the call (the one with the longest
	// wait when several did); ReasonNone when allowed.
	Reason Reason
	// RetryAfter is how long the caller should wait before trying again:
	// when the bucket will hold a token, or BusyRetry for a busy limit. It
	// is zero when allowed and at least a millisecond otherwise.
	RetryAfter time.Duration
	// Limit and Remaining describe the limit that refused the call, or the
	// bucket when it was allowed (both 0 without a rate): the capacity, and
	// what is left of it now, whole calls only.
	Limit, Remaining int
	// Bucket is the caller's bucket after the decision: refilled to now,
	// and one token less if allowed.
	Bucket Bucket
}

// Decide checks one call. Every limit is checked first and the bucket is
// consumed only if all allow. It does no I/O and reads no clock: now is the
// store's clock. A clock that goes back refills nothing. The Redis store's
// script is DecideBatch, line for line (redis.go).
func Decide(c Check, st State, now time.Time) Decision {
	var tools [1]ToolWant
	n := 0
	if c.ToolCap > 0 {
		tools[0], n = ToolWant{Cap: c.ToolCap, Calls: 1, Leases: st.Tool}, 1
	}
	return DecideBatch(c, 1, st, tools[:n], now)
}

// ToolWant is what a batch asks of one capped tool: Calls more leases
// among the tool's Leases, under its Cap.
type ToolWant struct {
	Cap, Calls int
	Leases     Leases
}

// DecideBatch checks calls (at least 1) of one caller at once, all or
// none: the bucket must hold a token for each, the caller's concurrency
// must have room for each one's lease, and each capped tool room for the
// calls of it (tools; c.ToolCap is not read). A batch of more calls than
// the burst or the concurrency limit is never allowed. Like Decide, it
// checks every limit first and consumes only if all allow.
func DecideBatch(c Check, calls int, st State, tools []ToolWant, now time.Time) Decision {
	tokens := refill(c, st.Bucket, now)
	var d Decision
	refuse := func(r Reason, wait time.Duration, limit int) {
		if wait > d.RetryAfter {
			d.Reason, d.RetryAfter, d.Limit, d.Remaining = r, wait, limit, 0
		}
	}
	need := float64(calls)
	if c.Rate > 0 && tokens < need {
		refuse(ReasonRate, ceilMillis((need-tokens)/c.Rate*1000), int(c.Burst))
	}
	if c.Concurrency > 0 && st.Caller.Live+calls > c.Concurrency {
		refuse(ReasonConcurrency, busyWait(st.Caller, now), c.Concurrency)
	}
	for _, tw := range tools {
		if tw.Cap > 0 && tw.Leases.Live+tw.Calls > tw.Cap {
			refuse(ReasonTool, busyWait(tw.Leases, now), tw.Cap)
		}
	}
	if d.Reason != ReasonNone {
		d.Bucket = Bucket{Tokens: tokens, At: now}
		return d
	}
	d.Allowed = true
	if c.Rate > 0 {
		tokens -= need
		d.Limit, d.Remaining = int(c.Burst), int(math.Floor(tokens))
	}
	d.Bucket = Bucket{Tokens: tokens, At: now}
	return d
}

// refill returns the bucket's tokens at now.
func refill(c Check, b Bucket, now time.Time) float64 {
	if c.Rate <= 0 || b.At.IsZero() {
		return c.Burst
	}
	elapsed := max(0, float64(now.Sub(b.At))/float64(time.Millisecond))
	return math.Min(c.Burst, b.Tokens+c.Rate*elapsed/1000)
}

// busyWait is the retry hint of a full lease set: BusyRetry, or the time
// until its earliest lease lapses if that comes sooner; at least 1 ms.
func busyWait(l Leases, now time.Time) time.Duration {
	wait := BusyRetry
	if !l.Earliest.IsZero() {
		wait = min(wait, ceilMillis(float64(l.Earliest.Sub(now))/float64(time.Millisecond)))
	}
	return max(wait, time.Millisecond)
}

// ceilMillis rounds a number of milliseconds up to a whole millisecond.
func ceilMillis(ms float64) time.Duration {
	return time.Duration(math.Ceil(ms)) * time.Millisecond
}

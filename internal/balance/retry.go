package balance

// DefaultRetries is how often the gateway moves a request that never ran
// on to another replica, unless configured otherwise: once, so a dead
// replica costs a request one extra dial, not a tour of the fleet.
const DefaultRetries = 1

// Outcome is how a failed attempt to forward a request ended.
type Outcome uint8

// The outcomes that matter to a retry.
const (
	// NotDelivered: no byte of the request was written on any connection
	// (dial refused or timed out, TLS failed, the context ended first). The
	// replica cannot have run it.
	NotDelivered Outcome = iota
	// RefusedDraining: the replica answered 503 {"status":"draining"}: it is
	// shutting down and did not run the request.
	RefusedDraining
	// Delivered: the request may have reached the replica, which then
	// failed (connection reset, no answer). It may have run.
	Delivered
)

// Attempt describes a failed attempt to forward a request.
type Attempt struct {
	Outcome Outcome
	// Safe reports that running the request twice does no harm: a method
	// that only reads (tools/list, resources/read, ping, ...), or a
	// tools/call of a tool whose replica declares readOnlyHint or
	// idempotentHint in its own tools/list.
	Safe bool
	// Retries counts the retries already made for this request.
	Retries int
	// MaxRetries is the configured bound.
	MaxRetries int
}

// MayRetry reports whether a failed attempt may be sent to another replica.
// A request that provably never ran (not delivered, or refused by a
// draining replica) may move on; a delivered one only when running it twice
// is safe, because the replica may have run it and a mutating tool would
// run twice (the lab's mission 4, "Double charge": retry only what never
// arrived). Never more than MaxRetries times.
func MayRetry(a Attempt) bool {
	if a.Retries >= a.MaxRetries {
		return false
	}
	switch a.Outcome {
	case NotDelivered, RefusedDraining:
		return true
	}
	return a.Safe
}

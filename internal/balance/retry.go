package balance

// Attempt describes a failed attempt to forward a request.
type Attempt struct {
	// Delivered reports that the request may have reached the replica: a
	// connection was made and writing the request began. Only a request that
	// provably never arrived (dial refused or timed out) is undelivered.
	Delivered bool
	// Retries counts the retries already made for this request.
	Retries int
	// MaxRetries is the configured bound.
	MaxRetries int
}

// MayRetry reports whether a failed attempt may be sent to another replica.
// A delivered request is never sent again: the replica may have run it, and a
// mutating tool would run twice (seed 000, "Double charge").
func MayRetry(a Attempt) bool {
	return !a.Delivered && a.Retries < a.MaxRetries
}

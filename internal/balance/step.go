package balance

// Verdict is what the send loop does after an attempt to forward a request
// failed: move on to another replica, or answer the client.
type Verdict uint8

// The verdicts.
const (
	// MoveOn: send the request to another replica (pick again, skipping the
	// ones already tried).
	MoveOn Verdict = iota
	// FailAfterDelivery: the request may have run; answer 502 and never
	// send it again.
	FailAfterDelivery
	// FailUnreachable: no replica could be reached for it; answer 502.
	FailUnreachable
	// FailNoReplica: no replica takes new work at all; answer 503.
	FailNoReplica
	// SessionLost: the replica that holds the request's session refused it
	// as draining or could not be reached, so the session is gone for this
	// client; answer 404 (-32001) and the client re-initializes
	// (2025-11-25 transports, "Session Management").
	SessionLost
)

// String returns the verdict's name as metrics and logs spell it.
func (v Verdict) String() string {
	switch v {
	case MoveOn:
		return "move_on"
	case FailAfterDelivery:
		return "after_delivery"
	case FailUnreachable:
		return "unreachable"
	case FailNoReplica:
		return "no_replica"
	case SessionLost:
		return "session_lost"
	}
	return "unknown"
}

// Step is the send loop's decision after a failed attempt of new work (a
// request not pinned to a replica): move on while MayRetry allows, else
// answer 502, after delivery or as unreachable.
func Step(a Attempt) Verdict {
	switch {
	case MayRetry(a):
		return MoveOn
	case a.Outcome == Delivered:
		return FailAfterDelivery
	}
	return FailUnreachable
}

// Exhausted is the send loop's answer when Pick finds no replica left after
// retries retries: with none made, no replica takes new work (503); after
// one or more, the ones tried could not be reached (502).
func Exhausted(retries int) Verdict {
	if retries == 0 {
		return FailNoReplica
	}
	return FailUnreachable
}

// NoneEligible is the verdict for new work that found no eligible replica
// when it began (every one down, draining, held or quarantined) and was
// sent to one anyway, as a last resort: unless that reached a replica and
// then failed (FailAfterDelivery stays), nothing could take the request,
// which is FailNoReplica (503, come back later), not an unreachable replica.
func NoneEligible(v Verdict) Verdict {
	if v == FailUnreachable {
		return FailNoReplica
	}
	return v
}

// PinnedVerdict is the answer to a request pinned to one replica, by its
// session or by the task it names, after the attempt there failed; it is
// never moved on. A delivered request is never resent (502). A task's
// replica that fails is unreachable (502): the task registry names it
// again next time. A session's replica that refused the request as
// draining, or could not be reached, has lost the session for this client:
// the session lives in the replica (404, SessionLost).
func PinnedVerdict(o Outcome, task bool) Verdict {
	switch {
	case o == Delivered:
		return FailAfterDelivery
	case task:
		return FailUnreachable
	}
	return SessionLost
}

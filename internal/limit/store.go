package limit

import (
	"context"
	"errors"
)

// ErrUnavailable means the store could not decide (Redis down or timing
// out). The Limiter then fails open or closed, as configured. Errors wrap it
// together with their cause.
var ErrUnavailable = errors.New("limits store unavailable")

// Lease is an admitted call's hold on its slots. The zero Lease holds
// nothing.
type Lease struct {
	// Caller and Tool are the keys the lease was taken under.
	Caller, Tool string
	// ID names the lease within them.
	ID string
}

// Held reports whether the lease holds any slot.
func (l Lease) Held() bool { return l.ID != "" }

// Store keeps the state behind decisions. Implementations are safe for
// concurrent use and, for Redis, shared by many gateway processes. Caller
// and tool are opaque keys already digested by the caller: no raw credential
// reaches a store.
type Store interface {
	// Acquire decides one call of caller (and of tool, if c.ToolCap > 0) by
	// the store's clock, and if it is allowed takes the leases c calls for,
	// expiring c.LeaseTTL from now unless renewed. The decision and the
	// update are one atomic step.
	Acquire(ctx context.Context, caller, tool string, c Check) (Decision, Lease, error)
	// AcquireBatch decides calls of caller at once, all or none, by the
	// store's clock (limit.DecideBatch): each takes a token and a slot of
	// the caller's, and each capped call a place among its tool's leases;
	// c.ToolCap is not read. If allowed it returns one lease for each call,
	// in order (not Held where no lease applies to the call). A refusal
	// takes nothing. The decision and the update are one atomic step as
	// far as the caller's state goes, and the tools' places are given back
	// when the caller's limits refuse.
	AcquireBatch(ctx context.Context, caller string, calls []Call, c Check) (Decision, []Lease, error)
	// Renew pushes the expiry of each lease to c.LeaseTTL from now. A lease
	// that lapsed or was released stays gone, so a renewal that crosses a
	// release cannot take the slot again.
	Renew(ctx context.Context, leases []Lease, c Check) error
	// Release drops a lease; releasing one that is gone is harmless.
	Release(ctx context.Context, l Lease) error
}

// Call is one call of a batch as a store sees it: its tool, and the cap on
// that tool's calls in flight fleet-wide (0: none).
type Call struct {
	Tool string
	Cap  int
}

package limit

import (
	"context"
	"math"
	"time"
)

// Besides one call at a time (Admit), a Limiter admits a JSON-RPC batch's
// requests together (AdmitBatch), new sessions (AdmitSession) and the calls
// of one client address (AdmitAddress), so that no way of sending a call
// walks past the limits (docs/GATEWAY.md, "Batches and limits").

// BatchCall is one request of a batch as admission sees it.
type BatchCall struct {
	// Method is the request's JSON-RPC method; Tool its tool, for
	// tools/call.
	Method, Tool string
}

// AdmitBatch decides the governed requests of a batch at once, all or
// none: each takes its own token and concurrency slot, and each tools/call
// a place under its tool's cap, as if each had come alone (Store's
// AcquireBatch). It returns nil when no request of calls is governed.
func (l *Limiter) AdmitBatch(ctx context.Context, caller string, calls []BatchCall) *Admission {
	var governed []Call
	for _, bc := range calls {
		if !l.Governs(bc.Method, bc.Tool) {
			continue
		}
		var c Call
		if bc.Method == "tools/call" && l.opts.Tools[bc.Tool] > 0 {
			c = Call{Tool: bc.Tool, Cap: l.opts.Tools[bc.Tool]}
		}
		governed = append(governed, c)
	}
	if len(governed) == 0 {
		return nil
	}
	return l.admitCalls(ctx, caller, governed, l.base)
}

// AdmitSession decides a new session (initialize) of caller against
// Options.Sessions: a bucket of that many, refilled at that many a
// minute, kept apart from the caller's calls. It returns nil when sessions
// are not limited.
func (l *Limiter) AdmitSession(ctx context.Context, caller string) *Admission {
	if l.opts.Sessions <= 0 {
		return nil
	}
	n := float64(l.opts.Sessions)
	return l.admit(ctx, "s:"+caller, "", Check{Rate: n / 60, Burst: n})
}

// AdmitAddress decides calls (at least 1) from one client address (a
// salted digest) against Options.PerAddress, all or none. It returns nil
// when addresses are not limited.
func (l *Limiter) AdmitAddress(ctx context.Context, addr string, calls int) *Admission {
	if l.opts.PerAddress <= 0 {
		return nil
	}
	rate := l.opts.PerAddress
	return l.admitCalls(ctx, "a:"+addr, make([]Call, max(calls, 1)), Check{Rate: rate, Burst: max(1, math.Ceil(rate))})
}

// admitCalls decides calls at once through the store and keeps the leases
// they take renewed.
func (l *Limiter) admitCalls(ctx context.Context, caller string, calls []Call, c Check) *Admission {
	start := time.Now()
	d, leases, err := l.store.AcquireBatch(ctx, caller, calls, c)
	a := &Admission{Decision: d, StoreTime: time.Since(start), l: l}
	if err != nil {
		return l.storeFailed(a, err)
	}
	for _, lease := range leases {
		switch {
		case !lease.Held():
		case !a.lease.Held():
			a.lease = lease
		default:
			a.more = append(a.more, lease)
		}
	}
	l.hold(a)
	return a
}

package limit

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of Options fields left zero.
const (
	DefaultLeaseTTL = 30 * time.Second
	// DefaultStoreRetry is the retry hint of a call refused because the
	// store did not answer (fail closed).
	DefaultStoreRetry = time.Second
	// DefaultFailLogEvery bounds the fail-open log to one line per interval.
	DefaultFailLogEvery = 10 * time.Second
	// storeTimeout bounds a lease's renewal and release.
	storeTimeout = time.Second
)

// Options configure a Limiter. The zero value limits nothing.
type Options struct {
	// Rate is each caller's calls per second; 0 means no rate limit.
	Rate float64
	// Burst is each caller's bucket size; 0 means Rate rounded up (at
	// least 1).
	Burst int
	// Concurrency is each caller's calls in flight; 0 means no limit.
	Concurrency int
	// Tools caps the calls of each named tool in flight, fleet-wide.
	Tools map[string]int
	// Methods are the JSON-RPC methods governed; nil means tools/call only.
	// A tool cap applies to tools/call alone.
	Methods []string
	// Sessions is each caller's new sessions (initialize) per minute,
	// burst as many; 0 means no limit.
	Sessions int
	// PerAddress is each client address's calls per second (burst: the
	// rate rounded up), checked beside the caller's limits for callers
	// whose credential is not verified; 0 means no limit.
	PerAddress float64
	// LeaseTTL is how long a lease outlives a gateway that stopped renewing
	// it (it died); 0 means 30 s. Leases are renewed every third of it.
	LeaseTTL time.Duration
	// FailClosed refuses calls while the store does not answer; the
	// default lets them through (fail open) and logs it.
	FailClosed bool
	// Log receives at most one fail-open line per DefaultFailLogEvery;
	// nil discards.
	Log *slog.Logger
}

// Limiter admits calls through a Store and keeps the leases of the calls it
// admitted renewed until they end. It is safe for concurrent use; Close
// stops the renewals.
type Limiter struct {
	store   Store
	opts    Options
	methods map[string]bool
	base    Check // the caller limits every governed call is checked against
	log     *slog.Logger

	mu   sync.Mutex // guards held
	held map[*Admission]struct{}

	lastFailLog atomic.Int64 // unix nanoseconds of the last fail-open line
	failed      atomic.Int64 // calls let through since that line

	stop     context.CancelFunc
	done     chan struct{}
	stopOnce sync.Once
}

// NewLimiter returns a Limiter over store and starts its renewals. A nil
// opts limits nothing.
func NewLimiter(store Store, opts *Options) *Limiter {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	burst := float64(o.Burst)
	if o.Rate > 0 && burst < 1 {
		burst = max(1, math.Ceil(o.Rate))
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	methods := map[string]bool{"tools/call": true}
	if o.Methods != nil {
		methods = make(map[string]bool, len(o.Methods))
		for _, m := range o.Methods {
			methods[m] = true
		}
	}
	ctx, stop := context.WithCancel(context.Background())
	l := &Limiter{
		store: store, opts: o, methods: methods, log: log,
		base: Check{Rate: o.Rate, Burst: burst, Concurrency: o.Concurrency, LeaseTTL: o.LeaseTTL},
		held: make(map[*Admission]struct{}),
		stop: stop, done: make(chan struct{}),
	}
	go l.renewLoop(ctx)
	return l
}

// MethodListen is the 2026-07-28 subscriptions/listen request, governed by
// the caller's limits whether Options.Methods names it or not: the gateway
// opens one on every replica (SEP-2575), so an ungoverned one would cost
// the fleet more than any call.
const MethodListen = "subscriptions/listen"

// Governs reports whether calls of method (and tool, for tools/call) are
// checked at all: a governed method (or MethodListen) with a caller or
// address limit, or a capped tool.
func (l *Limiter) Governs(method, tool string) bool {
	if !l.methods[method] && method != MethodListen {
		return false
	}
	if l.base.Rate > 0 || l.base.Concurrency > 0 || l.opts.PerAddress > 0 {
		return true
	}
	return method == "tools/call" && l.opts.Tools[tool] > 0
}

// Admission is the outcome of Admit. Call Done when the call's answer has
// ended, however it ended; Done is idempotent.
type Admission struct {
	Decision
	// StoreErr is the store's error when it did not answer: the call was
	// let through (fail open) or refused (fail closed, Reason is ReasonNone
	// and RetryAfter DefaultStoreRetry).
	StoreErr error
	// StoreTime is how long the store took to decide.
	StoreTime time.Duration

	l     *Limiter
	lease Lease
	more  []Lease // a batch's leases after the first
	once  sync.Once
}

// Admit decides one call of method by caller (a salted digest, never a
// credential), for tool when method is tools/call.
func (l *Limiter) Admit(ctx context.Context, caller, method, tool string) *Admission {
	c := l.base
	if method == "tools/call" {
		c.ToolCap = l.opts.Tools[tool]
	}
	if c.ToolCap == 0 {
		tool = ""
	}
	return l.admit(ctx, caller, tool, c)
}

// Reserve takes one of limit places under key for as long as the returned
// admission is not Done: the tool cap's machinery without a caller, and
// with Options' lease TTL, renewals and store-error policy. The gateway
// holds a replica's calls in flight with it (max_inflight), under the
// replica's name, in a store of its own. A refusal's RetryAfter is
// BusyRetry, or sooner when the earliest place in the way lapses.
func (l *Limiter) Reserve(ctx context.Context, key string, limit int) *Admission {
	return l.admit(ctx, "", key, Check{ToolCap: limit, LeaseTTL: l.opts.LeaseTTL})
}

// admit decides c through the store and keeps what it takes renewed.
func (l *Limiter) admit(ctx context.Context, caller, tool string, c Check) *Admission {
	start := time.Now()
	d, lease, err := l.store.Acquire(ctx, caller, tool, c)
	a := &Admission{Decision: d, StoreTime: time.Since(start), l: l, lease: lease}
	if err != nil {
		return l.storeFailed(a, err)
	}
	l.hold(a)
	return a
}

// storeFailed is the admission of a call the store did not decide: let
// through (fail open) or refused (fail closed).
func (l *Limiter) storeFailed(a *Admission, err error) *Admission {
	a.StoreErr = err
	a.Decision = Decision{Allowed: !l.opts.FailClosed}
	if l.opts.FailClosed {
		a.RetryAfter = DefaultStoreRetry
	} else if errors.Is(err, ErrUnavailable) {
		l.failedOpen(err)
	}
	return a
}

// hold keeps a's leases renewed until it is Done.
func (l *Limiter) hold(a *Admission) {
	if a.lease.Held() {
		l.mu.Lock()
		l.held[a] = struct{}{}
		l.mu.Unlock()
	}
}

// Done releases the call's leases.
func (a *Admission) Done() {
	if a == nil || !a.lease.Held() {
		return
	}
	a.once.Do(func() {
		l := a.l
		l.mu.Lock()
		delete(l.held, a)
		l.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		defer cancel()
		l.release(ctx, a.lease)
		for _, lease := range a.more {
			l.release(ctx, lease)
		}
	})
}

// release drops one lease, which otherwise lapses by itself.
func (l *Limiter) release(ctx context.Context, lease Lease) {
	if err := l.store.Release(ctx, lease); err != nil {
		l.log.Warn("releasing a limit lease failed: it lapses by itself", "error", err, "lease_ttl", l.opts.LeaseTTL.String())
	}
}

// Held returns how many leases this limiter holds now.
func (l *Limiter) Held() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.held)
}

// Close stops renewing leases; the leases of calls still running then lapse
// within the lease TTL. It is idempotent.
func (l *Limiter) Close() {
	l.stopOnce.Do(func() {
		l.stop()
		<-l.done
	})
}

// failedOpen counts a call let through without a decision and logs at most
// one line per DefaultFailLogEvery.
func (l *Limiter) failedOpen(err error) {
	n := l.failed.Add(1)
	now := time.Now().UnixNano()
	last := l.lastFailLog.Load()
	if now-last < int64(DefaultFailLogEvery) || !l.lastFailLog.CompareAndSwap(last, now) {
		return
	}
	l.failed.Add(-n)
	l.log.Warn("limiter.fail_open", "error", err, "calls_let_through", n)
}

// renewLoop renews every held lease each third of the lease TTL.
func (l *Limiter) renewLoop(ctx context.Context) {
	defer close(l.done)
	t := time.NewTicker(l.opts.LeaseTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		l.mu.Lock()
		leases := make([]Lease, 0, len(l.held))
		for a := range l.held {
			leases = append(leases, a.lease)
			leases = append(leases, a.more...)
		}
		l.mu.Unlock()
		if len(leases) == 0 {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, storeTimeout)
		if err := l.store.Renew(rctx, leases, l.base); err != nil && ctx.Err() == nil {
			l.log.Warn("renewing limit leases failed", "leases", len(leases), "error", err)
		}
		cancel()
	}
}

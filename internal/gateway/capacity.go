package gateway

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/balance"
	"github.com/mcpfleet/mcpfleet/internal/limit"
	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// Replica capacity (docs/GATEWAY.md, "Replica capacity"): a replica given
// max_inflight runs at most that many requests at once, counted over every
// gateway that shares the limits store. Each request that carries JSON-RPC
// work (a POST of a request) holds a place at the replica it is sent to,
// from before it is forwarded until its answer has ended: a lease in the
// capacity store, taken with the tool cap's machinery under the replica's
// name (limit.Limiter.Reserve). A pick whose replica is full moves on to
// the next the policy would choose; when every eligible replica is full,
// the request waits in a bounded queue for up to queue_timeout (re-asking
// the store every pollEvery, and at once when a place of this gateway
// frees), then is answered 503 with Retry-After. It is never sent to a
// full replica. A session's request waits for a place at its own replica.

// capacityPoll bounds how long a queued request waits before asking the
// store again: places freed by other gateways send no signal.
const (
	capacityPollMin = 20 * time.Millisecond
	capacityPollMax = 100 * time.Millisecond
)

// errAtCapacity answers a request that found every replica it may go to at
// its max_inflight.
func errAtCapacity(retry time.Duration) *mcpmsg.Error {
	ms := strconv.FormatInt(retry.Milliseconds(), 10)
	return &mcpmsg.Error{Status: http.StatusServiceUnavailable, Code: mcpmsg.CodeInternalError,
		Message: "every replica is at capacity (max_inflight); retry after " + ms + " ms",
		Data:    []byte(`{"retryAfterMs":` + ms + `}`)}
}

// place is a request's hold on one place at a replica. Done gives it back;
// a nil place holds nothing.
type place struct {
	a *limit.Admission
	c *capacity
}

// Done gives the place back and wakes this gateway's queued requests.
func (p *place) Done() {
	if p == nil {
		return
	}
	p.a.Done()
	p.c.freed()
}

// capacity is the gateway's side of max_inflight: the store's limiter, the
// caps, and the queue of requests waiting for a place.
type capacity struct {
	lim     *limit.Limiter
	caps    atomic.Pointer[map[string]int] // by replica name; SetMaxInflight swaps it
	def     int
	timeout time.Duration
	size    int

	mu      sync.Mutex
	waiting int
	wake    chan struct{} // closed when a place frees; nil while nobody waits
}

func newCapacity(o *Options) *capacity {
	if o.Capacity == nil {
		return nil
	}
	c := &capacity{lim: o.Capacity, def: o.DefaultMaxInflight, timeout: o.QueueTimeout, size: o.QueueSize}
	caps := o.MaxInflight
	c.caps.Store(&caps)
	return c
}

// limitOf returns rep's max_inflight; 0 means none.
func (c *capacity) limitOf(rep *upstream.Replica) int {
	if n, ok := (*c.caps.Load())[rep.Name()]; ok {
		return n
	}
	return c.def
}

// ErrCapacityOff is SetMaxInflight's answer when the gateway started
// without a capacity store: a cap needs a restart to turn on.
var ErrCapacityOff = errors.New("max_inflight was off at start: a cap needs a restart to turn on")

// SetMaxInflight swaps in the named replicas' caps (a reload of the
// upstreams); requests already holding places keep them.
func (g *Gateway) SetMaxInflight(caps map[string]int) error {
	if g.cap == nil {
		if len(caps) > 0 {
			return ErrCapacityOff
		}
		return nil
	}
	g.cap.caps.Store(&caps)
	return nil
}

// freed wakes every queued request: one of them may take the place.
func (c *capacity) freed() {
	c.mu.Lock()
	if c.wake != nil {
		close(c.wake)
		c.wake = nil
	}
	c.mu.Unlock()
}

// join enters the queue if there is room.
func (c *capacity) join() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.waiting >= c.size {
		return false
	}
	c.waiting++
	return true
}

func (c *capacity) leave() {
	c.mu.Lock()
	c.waiting--
	c.mu.Unlock()
}

// next returns the channel that closes when a place of this gateway frees.
func (c *capacity) next() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.wake == nil {
		c.wake = make(chan struct{})
	}
	return c.wake
}

// queued returns how many requests wait for a place now.
func (c *capacity) queued() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.waiting
}

// capped reports whether a request holds a place while it runs: a POST to
// the MCP endpoint that carries a JSON-RPC request. Notifications and
// responses are accepted at once, GET streams carry no work of their own,
// and a 2024-11-05 message is answered 202 before it runs (its answer goes
// down the SSE stream), so none of them is held.
func (g *Gateway) capped(r *http.Request, q *request) bool {
	return g.cap != nil && r.Method == http.MethodPost && r.URL.Path == g.opts.Path && q.msg.Kind == mcpmsg.KindRequest
}

// reserve takes a place at rep, or reports it full. A store that does not
// answer lets the request through or refuses it as limits.on_store_error
// says.
func (g *Gateway) reserve(ctx context.Context, rep *upstream.Replica, n int, rec *record) (*place, bool, time.Duration, *mcpmsg.Error) {
	a := g.cap.lim.Reserve(ctx, rep.Name(), n)
	switch {
	case a.StoreErr != nil && a.Allowed:
		rec.capacity = "fail_open"
		g.metrics.capacityFailOpen.Inc()
		return nil, true, 0, nil
	case a.StoreErr != nil:
		rec.capacity = "store"
		g.metrics.capacityRefused.WithLabelValues("store").Inc()
		g.log.Warn("capacity store unavailable: refusing (on_store_error closed)", "replica", rep.Name(), "error", a.StoreErr)
		return nil, false, a.RetryAfter, errAtCapacity(a.RetryAfter)
	case a.Allowed:
		return &place{a: a, c: g.cap}, true, 0, nil
	}
	g.metrics.capacityFull.WithLabelValues(rep.Name()).Inc()
	return nil, false, a.RetryAfter, nil
}

// pickPlace chooses a replica for new work that has a place for it,
// queueing while every eligible one is full. It returns -1 and no error
// when there is nothing left to pick (every replica tried).
func (g *Gateway) pickPlace(ctx context.Context, r *http.Request, q *request, snap *upstream.Snapshot, ok func(int) bool, in balance.Input, tried []int, rec *record) (int, *place, time.Duration, *mcpmsg.Error) {
	if !g.capped(r, q) {
		return g.pick(snap, ok, in, tried), nil, 0, nil
	}
	return g.queueFor(ctx, rec, func() (int, *place, time.Duration, *mcpmsg.Error) {
		full := tried
		retry := limit.BusyRetry
		for {
			idx := g.pick(snap, ok, in, full)
			if idx < 0 {
				if len(full) == len(tried) {
					return -1, nil, 0, nil // nothing to wait for
				}
				return -2, nil, retry, nil
			}
			rep := snap.At(idx)
			n := g.cap.limitOf(rep)
			if n <= 0 {
				return idx, nil, 0, nil
			}
			p, ok, wait, err := g.reserve(ctx, rep, n, rec)
			if err != nil || ok {
				return idx, p, wait, err
			}
			retry = min(retry, wait)
			full = append(full[:len(full):len(full)], idx)
		}
	})
}

// placeAt waits for a place at rep, a session's or a task's replica.
func (g *Gateway) placeAt(ctx context.Context, rep *upstream.Replica, rec *record) (*place, time.Duration, *mcpmsg.Error) {
	n := g.cap.limitOf(rep)
	if n <= 0 {
		return nil, 0, nil
	}
	_, p, retry, err := g.queueFor(ctx, rec, func() (int, *place, time.Duration, *mcpmsg.Error) {
		p, ok, wait, err := g.reserve(ctx, rep, n, rec)
		if err != nil || ok {
			return 0, p, wait, err
		}
		return -2, nil, wait, nil
	})
	return p, retry, err
}

// queueFor runs try until it finds a place (or an answer), waiting in the
// queue between tries for up to queue_timeout. try returns -2 when every
// replica it may use is full, with the store's hint of when to come back.
func (g *Gateway) queueFor(ctx context.Context, rec *record, try func() (int, *place, time.Duration, *mcpmsg.Error)) (int, *place, time.Duration, *mcpmsg.Error) {
	idx, p, retry, err := try()
	if idx != -2 {
		return idx, p, retry, err
	}
	c := g.cap
	if c.timeout <= 0 || !c.join() {
		reason := "full"
		if c.timeout > 0 {
			reason = "queue_full"
		}
		return g.atCapacity(rec, reason, retry)
	}
	defer c.leave()
	start := time.Now()
	deadline := start.Add(c.timeout)
	defer func() { g.metrics.capacityWait.Observe(time.Since(start).Seconds()) }()
	rec.capacity = "queued"
	for {
		wait := min(max(retry, capacityPollMin), capacityPollMax, time.Until(deadline))
		if wait <= 0 {
			return g.atCapacity(rec, "timeout", retry)
		}
		woke := c.next()
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			rec.clientGone = true
			return -1, nil, 0, errUnreachable
		case <-woke:
			t.Stop()
		case <-t.C:
		}
		if idx, p, retry, err = try(); idx != -2 {
			return idx, p, retry, err
		}
	}
}

// atCapacity refuses a request that found no place.
func (g *Gateway) atCapacity(rec *record, reason string, retry time.Duration) (int, *place, time.Duration, *mcpmsg.Error) {
	rec.capacity = reason
	g.metrics.capacityRefused.WithLabelValues(reason).Inc()
	retry = max(retry, time.Millisecond)
	return -1, nil, retry, errAtCapacity(retry)
}

// setRetryAfter names when to come back on a capacity refusal, in whole
// seconds rounded up (RFC 9110, section 10.2.3).
func setRetryAfter(w http.ResponseWriter, retry time.Duration) {
	w.Header().Set("Retry-After", strconv.FormatInt(int64((retry+time.Second-1)/time.Second), 10))
}

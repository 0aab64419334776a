// Package gateway is the MCP-aware http.Handler: it classifies each request
// by protocol era, routes it to a replica of the fleet (legacy sessions to
// the replica that minted them, stateless requests anywhere), forwards it
// without ever sending a delivered request twice, and relays the answer,
// SSE event by event.
package gateway

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/authz"
	"github.com/mcpfleet/mcpfleet/internal/balance"
	"github.com/mcpfleet/mcpfleet/internal/hostmatch"
	"github.com/mcpfleet/mcpfleet/internal/idem"
	"github.com/mcpfleet/mcpfleet/internal/identity"
	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
	"github.com/mcpfleet/mcpfleet/internal/session"
	"github.com/mcpfleet/mcpfleet/internal/streams"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// Gateway routes MCP traffic to a fleet. Create it with New; it is safe for
// concurrent use.
type Gateway struct {
	opts        Options
	guard       hostmatch.Guard // which Host and Origin may reach a replica
	fleet       *upstream.Fleet
	keys        *session.Keyring  // seals and opens legacy session IDs
	tasks       session.TaskStore // 2026-07-28 task -> replica
	aff         *affinity         // routing keys and rings for the hash policy
	openers     *identity.Keyer   // digests of session openers (binding.go)
	annotations *annotations      // which tools may run twice
	idem        idem.Store        // idempotency records; nil: off
	fwd         forwarder
	conns       *connSet // the forwarders' connections, by replica address (connset.go)
	log         *slog.Logger
	metrics     *Metrics
	seq         atomic.Uint64                  // round-robin counter
	draining    atomic.Bool                    // /readyz answers 503 once set
	stores      *storeCheck                    // what /readyz asks of the stores
	warm        *warmup                        // /readyz's wait for the first round of checks
	noReplica   *mcpmsg.Error                  // the answer when no replica can take new work
	cap         *capacity                      // max_inflight; nil when no replica has one
	tw          *toolWatch                     // every replica's tools; nil when off
	mem         *memoryBudget                  // nil without Options.MemoryLimit
	tr          *tracing                       // nil without Options.Tracer
	ops         seriesCache[opKey, *opSeries]  // the series of the MCP operation durations
	reqs        seriesCache[reqKey, reqSeries] // the requests' counters and durations
	started     time.Time                      // for the fleet view's uptime
	sseCalls    sseCalls                       // the calls of the 2024-11-05 streams relayed here (lostrelay.go)
	authz       atomic.Pointer[authz.Policy]   // the authorization rules; nil when off (authz.go)

	// recent keeps the events of the legacy POST streams being relayed,
	// and of those whose client went away when Options.Streams is nil.
	recent        *streams.Memory
	streamMetrics *streamMetrics

	// base ends streams that outlive their client (legacy POST streams run
	// to their end after a client drops them); Close cancels it.
	base   context.Context
	cancel context.CancelFunc
	// standalone ends legacy GET streams: they carry no request, never end
	// by themselves, and a client reopens them (with Last-Event-ID) where
	// it can; EndStandaloneStreams cancels it on shutdown.
	standalone    context.Context
	endStandalone context.CancelFunc
	// ending ends the client side of every legacy stream still relayed
	// (standalone ones with it) when the shutdown's grace is over;
	// EndStreamsForShutdown cancels it.
	ending     context.Context
	endStreams context.CancelFunc
	ends       atomic.Int64 // the relays' shutdown hooks (endOnShutdown) not yet run or stopped
}

// New returns a gateway for fleet. A nil logger discards logs; a nil opts
// means defaults. Call Close when done.
func New(fleet *upstream.Fleet, log *slog.Logger, opts *Options) (*Gateway, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	o := opts.withDefaults()
	keys := o.Keyring
	if keys == nil {
		var err error
		if keys, err = randomKeyring(); err != nil {
			return nil, err
		}
		log.Warn("no session key configured: using a random one; sessions will not survive a restart and other gateway processes cannot open them")
	}
	if o.RoutingSalt == nil {
		// One random salt for routing keys and openers alike.
		o.RoutingSalt = make([]byte, 32)
		if _, err := rand.Read(o.RoutingSalt); err != nil {
			return nil, fmt.Errorf("making a routing salt: %w", err)
		}
	}
	aff, err := newAffinity(&o)
	if err != nil {
		return nil, err
	}
	openers, err := newOpenerKeyer(o.RoutingSalt)
	if err != nil {
		return nil, err
	}
	guard, err := newGuard(&o)
	if err != nil {
		return nil, err
	}
	base, cancel := context.WithCancel(context.Background())
	ending, endStreams := context.WithCancel(base)
	standalone, endStandalone := context.WithCancel(ending)
	now := time.Now()
	conns := newConnSet()
	g := &Gateway{
		started:       now,
		warm:          newWarmup(now, &o),
		noReplica:     noReplicaError(o.HealthCheckInterval),
		ending:        ending,
		endStreams:    endStreams,
		standalone:    standalone,
		endStandalone: endStandalone,
		aff:           aff,
		openers:       openers,
		guard:         guard,
		annotations:   newAnnotations(),
		idem:          o.Idempotency,
		opts:          o,
		fleet:         fleet,
		keys:          keys,
		tasks:         o.Tasks,
		conns:         conns,
		fwd:           newLeanForwarder(conns.wrap(dialer(o.DialTimeout, o.Dial)), o.UpstreamPoolSize, o.Proxies),
		log:           log,
		base:          base,
		cancel:        cancel,
		stores:        &storeCheck{check: o.StoreCheck, now: time.Now},
		cap:           newCapacity(&o),
	}
	if o.Local != nil {
		g.fwd = &localForwarder{local: o.Local, next: g.fwd, log: log, proxies: o.Proxies}
	}
	g.tr = newTracing(o.Tracer, o.Meter)
	g.mem = newMemoryBudget(&o, log)
	if g.mem != nil {
		go g.mem.run(base)
	}
	g.tw = newToolWatch(g, o.Tools)
	if g.tw != nil {
		go g.tw.run(base)
	}
	g.metrics = newMetrics(g)
	for snap, i := fleet.Snapshot(), 0; i < snap.Len(); i++ {
		g.metrics.zeroReplica(snap.At(i).Name())
	}
	g.SetAuthz(o.Authz)
	g.recent = streams.NewMemory(o.StreamLimits)
	g.streamMetrics = newStreamMetrics(g)
	return g, nil
}

func randomKeyring() (*session.Keyring, error) {
	k := session.Key{ID: 0}
	if _, err := rand.Read(k.Secret[:]); err != nil {
		return nil, fmt.Errorf("making a session key: %w", err)
	}
	return session.NewKeyring([]session.Key{k})
}

// Metrics returns the gateway's metrics, for the admin listener.
func (g *Gateway) Metrics() *Metrics { return g.metrics }

// SetDraining makes /readyz answer 503 draining, so balancers in front stop
// sending new work while requests in flight finish; /healthz stays 200.
func (g *Gateway) SetDraining() { g.draining.Store(true) }

// EndStandaloneStreams closes every legacy GET stream now. On shutdown they
// would otherwise hold the whole grace period: they carry no request and
// never end by themselves, and their clients reopen them elsewhere.
func (g *Gateway) EndStandaloneStreams() { g.endStandalone() }

// EndStreamsForShutdown ends the client side of every legacy stream still
// relayed, for a shutdown whose grace is over: each gets a last event with
// the ID of the last event written to it and a retry field (SEP-1699), so
// that its client resumes it, through another gateway process. A legacy
// POST stream's call goes on into the buffer until Close. Call it before
// cutting the connections: it returns once those last events are written,
// or after endWait. 2026-07-28 streams are not touched.
func (g *Gateway) EndStreamsForShutdown() {
	g.endStreams()
	// A counter polled, not a WaitGroup: a relay may still begin (and Add)
	// while this waits.
	deadline := time.Now().Add(endWait)
	for g.ends.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
}

// endWait bounds how long EndStreamsForShutdown waits for the last events:
// a client that reads them not at once is cut without.
const endWait = time.Second

// Close ends streams left running for departed clients and closes idle
// upstream connections. It is idempotent.
func (g *Gateway) Close() {
	g.cancel()
	if f, ok := g.fwd.(interface{ close() }); ok {
		f.close()
	}
}

// ServeHTTP serves the MCP endpoint, /healthz and /readyz.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// While draining, every HTTP/1.x answer ends its connection: the pools
	// of balancers and clients empty before the listener closes, instead
	// of holding idle connections that shutdown would cut under a request
	// already on its way.
	if r.ProtoMajor == 1 && g.draining.Load() {
		w = &closingWriter{ResponseWriter: w}
	}
	if ambiguousPath(requestPath(r)) {
		g.refusePath(w, r)
		return
	}
	switch r.URL.Path {
	case g.opts.Path:
	case "/healthz":
		g.serveHealthz(w)
		return
	case "/readyz":
		g.serveReadyz(w, r)
		return
	default:
		if g.serveSSE(w, r) {
			return
		}
		if g.servesOwnMetadata(r.URL.Path) {
			g.serveResourceMetadata(w, r)
			return
		}
		if ok, readOnly := g.passesThrough(r.URL.Path); ok {
			g.servePassthrough(w, r, readOnly)
			return
		}
		http.NotFound(w, r)
		return
	}
	c := g.beginCall(r)
	rec := &c.rec
	defer func() {
		if rec.parked {
			return // the stream ends it (pumping.resume)
		}
		g.finish(rec)
		if rec.detached != nil {
			rec.detached()
		}
	}()

	if e := g.edgeRefusal(r); e != nil {
		rec.reject(w, e, nil)
		return
	}
	verified, ok := g.authenticate(w, r, rec)
	if !ok {
		return
	}
	// 1. Classify: read the bounded body, find era, method and session.
	if r.Method != http.MethodPost && r.Method != http.MethodGet && r.Method != http.MethodDelete {
		rec.reject(w, errMethod, nil)
		return
	}
	q, rerr := g.classify(w, r, &c.q)
	q.verified = verified
	rec.q = q
	if g.tr != nil {
		r = g.startSpan(r, q, rec)
	}
	if rerr != nil {
		rec.reject(w, rerr, q.id())
		return
	}
	if g.refuseForMemory(w, r, q, rec) {
		return
	}
	g.identify(r, q)
	// Authorize: a denied request spends no limit and reaches no replica.
	if !g.authorize(w, r, q, rec) {
		return
	}
	// 2. Route: the session's replica, or a pick for new work; a
	// subscriptions/listen goes to every replica.
	route, rerr := g.route(r.Context(), q)
	if rerr != nil {
		rec.reject(w, rerr, q.id())
		return
	}
	// Legacy streams get sealed event IDs; a resume (Last-Event-ID) is
	// answered from the buffer, or goes to the replica with its own ID.
	r, done := g.openStream(w, r, q, route, rec)
	if done || g.endStandaloneNow(w, r, rec) {
		return
	}
	// 3. Admit: the caller's rate and concurrency, the tool's cap; the
	// leases last until the answer has ended. A listen that fans out is
	// admitted once, before any replica sees it.
	adm, ok := g.admit(w, r, q, rec)
	if !ok {
		return
	}
	defer adm.Done()
	if route.snap != nil && fansOut(q, route.snap) {
		g.serveFanout(w, r, q, route.snap, rec)
		return
	}
	// 4. Answer from the cache where the replicas said it is safe.
	if g.fromCache(w, r, q, rec) {
		return
	}
	// 5. Deduplicate: a call that names itself one logical call runs once.
	if c := g.idempotencyKey(r, q); c != nil {
		c, answered := g.claimOrAnswer(r.Context(), w, r, q, c, rec)
		if answered {
			return
		}
		if c != nil {
			rec.claim = c
			defer g.settle(c)
		}
	}
	// 6. Forward, moving on only from replicas the request never reached.
	ctx, release := g.upstreamContext(r, q)
	rec.upstream = ctx
	defer func() {
		if !rec.parked {
			release()
		}
	}()
	if rec.tap != nil {
		rec.tap.cancelUpstream = release
	}
	// 7. Answer: pass the replica's answer through; if it keeps a streamable
	// request waiting past the keep-alive interval, open the SSE stream
	// ourselves so keep-alives can flow before the replica says anything.
	res, early := g.forwardAwait(ctx, w, r, q, route, rec)
	if res.err != nil && early == nil && g.endStandaloneNow(w, r, rec) {
		return // the standalone streams ended while it was forwarded
	}
	if res.err == errAfterDelivery {
		g.lostBeforeAnswer(w, early, q, rec)
		return
	}
	if res.err != nil {
		if early != nil {
			g.endWithError(early, res.err, q, rec)
			return
		}
		if res.retry > 0 {
			setRetryAfter(w, res.retry)
		}
		rec.reject(w, res.err, q.id())
		return
	}
	defer func() {
		if !rec.parked {
			res.resp.Body.Close()
			res.rep.Release()
			res.place.Done()
		}
	}()
	if q.sessionID != "" && res.resp.StatusCode == http.StatusNotFound && early == nil {
		// The replica no longer knows the session (ended, expired, or the
		// replica restarted): answer as the transport says, 404 with -32001.
		g.metrics.sessionMisses.WithLabelValues("ended").Inc()
		rec.reject(w, errSessionNotFound, q.id())
		return
	}
	// 8. Seal the session a replica minted; never show a replica's own ID.
	g.learn(q, res.rep, res.resp)
	// 9. Relay: JSON as is, SSE event by event.
	if early != nil {
		g.relayLate(early, r, q, res.resp, rec)
		return
	}
	if r.Method == http.MethodGet && adm == nil && rec.claim == nil {
		// A standalone stream may park (pumping): what the defers above
		// would do is left to it. Copies, so that only this path's
		// variables live on the heap.
		kept, rel := res, release
		rec.leave = func() {
			kept.resp.Body.Close()
			kept.rep.Release()
			kept.place.Done()
			rel()
		}
	}
	g.relay(w, r, q, res.resp, rec)
}

// upstreamContext returns the context of the upstream request. A dropped
// 2026-07-28 stream is the cancel of its request, so the client's context
// goes upstream. A dropped legacy POST stream must not cancel the call
// (2025-11-25 transports, "Cancellation"): its upstream request lives on,
// detached from the client, until it ends or the gateway closes.
func (g *Gateway) upstreamContext(r *http.Request, q *request) (context.Context, func()) {
	if r.Method == http.MethodGet {
		ctx, cancel := context.WithCancel(r.Context())
		stop := context.AfterFunc(g.standalone, cancel)
		return ctx, func() { stop(); cancel() }
	}
	if q.era == mcpmsg.EraStateless || r.Method != http.MethodPost {
		return r.Context(), func() {}
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	stop := context.AfterFunc(g.base, cancel)
	return ctx, func() { stop(); cancel() }
}

func (g *Gateway) random() uint64 { return mrand.Uint64() }

var _ balance.View = (*upstream.Snapshot)(nil)

package gateway

import (
	"cmp"
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// How often, and how long, /readyz asks the stores: probes from several
// balancers and the orchestrator share one answer a second, and a store
// that hangs costs a probe at most storeCheckTimeout.
const (
	storeCheckEvery   = time.Second
	storeCheckTimeout = 500 * time.Millisecond
)

// serveHealthz answers liveness: 200 while the process serves, draining
// included, so an orchestrator never restarts a gateway for draining. The
// body says which.
func (g *Gateway) serveHealthz(w http.ResponseWriter) {
	if g.draining.Load() {
		writeStatus(w, http.StatusOK, `{"status":"draining"}`)
		return
	}
	writeStatus(w, http.StatusOK, `{"status":"ok"}`)
}

// serveReadyz answers readiness, what balancers in front probe: 200 when
// this gateway can take new work; 503 while it drains, while the fleet's
// first round of checks is out (starting), while no replica can take new
// work, or while a store it needs does not answer.
func (g *Gateway) serveReadyz(w http.ResponseWriter, r *http.Request) {
	st := g.readiness(r.Context())
	writeStatus(w, st.code(), st.body(""))
}

// readiness is what /readyz says of one gateway: ready, draining, or not
// ready and why.
type readiness struct {
	status, reason string
}

func (g *Gateway) readiness(ctx context.Context) readiness {
	switch {
	case g.draining.Load():
		return readiness{status: "draining"}
	case g.warm.waiting(g.fleet.Snapshot(), time.Now()):
		return readiness{status: "starting"}
	case !g.anyEligible():
		return readiness{"not ready", "no replica can take new work"}
	case g.stores.err(ctx) != nil:
		return readiness{"not ready", "store does not answer"}
	}
	return readiness{status: "ready"}
}

func (s readiness) code() int {
	if s.status == "ready" {
		return http.StatusOK
	}
	return http.StatusServiceUnavailable
}

// body is the JSON answer; service, when not "", prefixes the reason.
func (s readiness) body(service string) string {
	if s.reason == "" {
		return `{"status":"` + s.status + `"}`
	}
	reason := s.reason
	if service != "" {
		reason = "service " + service + ": " + reason
	}
	return `{"status":"` + s.status + `","reason":"` + reason + `"}`
}

func (g *Gateway) anyEligible() bool { return anyEligible(g.fleet.Snapshot()) }

// anyEligible reports whether a replica of s may take new work.
func anyEligible(s *upstream.Snapshot) bool {
	for i := range s.Len() {
		if s.Eligible(i) {
			return true
		}
	}
	return false
}

// warmup is /readyz's wait for the fleet's first round of health checks:
// a replica not yet checked is up by default (package health), so without
// the wait a gateway would say ready in the instant before its checks find
// every replica dead, and a balancer would send it work it has nowhere to
// send.
type warmup struct {
	// until bounds the wait (the check interval plus its timeout after
	// New); zero when no checks run and there is nothing to wait for.
	until time.Time
	// over is set once the wait has ended; it never begins again, even
	// when a replica that joins later has not been checked yet.
	over atomic.Bool
}

func newWarmup(start time.Time, o *Options) *warmup {
	w := &warmup{}
	if o.HealthCheckInterval > 0 {
		w.until = start.Add(o.HealthCheckInterval + cmp.Or(o.HealthCheckTimeout, upstream.DefaultCheckTimeout))
	}
	return w
}

// waiting reports whether /readyz still waits at now: checks run, now is
// before the bound, and a replica of snap has had no check yet.
func (w *warmup) waiting(snap *upstream.Snapshot, now time.Time) bool {
	if w.until.IsZero() || w.over.Load() {
		return false
	}
	if now.Before(w.until) && !allChecked(snap) {
		return true
	}
	w.over.Store(true)
	return false
}

// allChecked reports whether every replica of s has had an active check.
func allChecked(s *upstream.Snapshot) bool {
	for i := range s.Len() {
		if s.At(i).LastCheck() == nil {
			return false
		}
	}
	return true
}

// storeCheck remembers the last answer of Options.StoreCheck for
// storeCheckEvery. The zero value (no check) is always ready.
type storeCheck struct {
	check func(context.Context) error
	now   func() time.Time

	mu   sync.Mutex
	at   time.Time
	last error
}

func (s *storeCheck) err(ctx context.Context) error {
	if s.check == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if now := s.now(); s.at.IsZero() || now.Sub(s.at) >= storeCheckEvery {
		c, cancel := context.WithTimeout(ctx, storeCheckTimeout)
		s.last = s.check(c)
		cancel()
		s.at = now
	}
	return s.last
}

func writeStatus(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write([]byte(body + "\n"))
}

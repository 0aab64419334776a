package gateway

import (
	"context"
	"net/http"
	"sync"
	"time"
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
// this gateway can take new work; 503 while it drains, while no replica
// can take new work, or while a store it needs does not answer.
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

func (g *Gateway) anyEligible() bool {
	s := g.fleet.Snapshot()
	for i := range s.Len() {
		if s.Eligible(i) {
			return true
		}
	}
	return false
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

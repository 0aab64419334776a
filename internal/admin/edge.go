package admin

import (
	"crypto/sha256"
	"crypto/subtle"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"

	"github.com/mcpfleet/mcpfleet/internal/hostmatch"
)

// The admin listener drains replicas and shows the fleet, so a page in a
// browser must not reach it: neither through DNS rebinding (a name of the
// attacker's resolving to the listener, the attacker's name as Host and
// as Origin) nor by posting from another site. Protect puts every route
// behind the Host and Origin check; its Guard is Strict (loopback names,
// the address the request arrived on, and the names the operator allows).
// RequireToken guards what the fleet view's token does not: /metrics when
// closed, Go's profiles always.

// Listener says how the admin listener's own routes are served.
type Listener struct {
	// Token is the admin token; "" for none (then Pprof and a closed
	// /metrics serve nothing).
	Token string
	// Metrics serves /metrics; nil serves none.
	Metrics http.Handler
	// MetricsOpen serves /metrics without the token, for Prometheus.
	MetricsOpen bool
	// Pprof serves Go's profiles at /debug/pprof/, behind the token always:
	// they show the process's memory.
	Pprof bool
	// Guard decides the Host and Origin every route takes; nil means a
	// Strict guard with no names and no origins of its own.
	Guard *hostmatch.Guard
}

// Serve adds /metrics and Go's profiles to mux as l says, beside the
// fleet view's routes (Register), and returns mux behind l.Guard: the
// admin listener's handler.
func (l *Listener) Serve(mux *http.ServeMux) http.Handler {
	if l.Metrics != nil {
		m := l.Metrics
		if !l.MetricsOpen {
			m = RequireToken(l.Token, m)
		}
		mux.Handle("/metrics", m)
	}
	if l.Pprof {
		pp := http.NewServeMux()
		pp.HandleFunc("/debug/pprof/", pprof.Index)
		pp.HandleFunc("/debug/pprof/profile", pprof.Profile)
		pp.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		pp.HandleFunc("/debug/pprof/trace", pprof.Trace)
		mux.Handle("/debug/pprof/", RequireToken(l.Token, pp))
	}
	return Protect(mux, l.Guard)
}

// Protect serves h to requests whose Host and Origin guard takes (nil: a
// Strict guard); the others get 403 and reach nothing.
func Protect(h http.Handler, guard *hostmatch.Guard) http.Handler {
	if guard == nil {
		guard = &hostmatch.Guard{Strict: true}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		switch guard.Check(r.Host, r.Header.Values("Origin"), hostmatch.IP(a)) {
		case nil:
			h.ServeHTTP(w, r)
		case hostmatch.ErrHost:
			writeJSON(w, http.StatusForbidden, errorBody{"host not allowed on the admin listener (DNS rebinding protection); allowed_hosts adds names"})
		default:
			writeJSON(w, http.StatusForbidden, errorBody{"origin not allowed on the admin listener"})
		}
	})
}

// RequireToken serves h only to requests that carry token as
// "Authorization: Bearer"; the others get 401. An empty token takes no
// request at all.
func RequireToken(token string, h http.Handler) http.Handler {
	return newBearer(token).wrap(h.ServeHTTP)
}

// bearer checks an Authorization header against a token.
type bearer struct {
	sum []byte // SHA-256 of the token; nil takes nothing
}

func newBearer(token string) *bearer {
	if token == "" {
		return &bearer{}
	}
	sum := sha256.Sum256([]byte(token))
	return &bearer{sum: sum[:]}
}

// wrap answers 401 to a request without the token, or with another, and
// hands the rest to next.
func (b *bearer) wrap(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !b.ok(r.Header.Get("Authorization")) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="mcpfleet admin"`)
			writeJSON(w, http.StatusUnauthorized, errorBody{"a valid admin token is required (Authorization: Bearer)"})
			return
		}
		next(w, r)
	}
}

// ok compares the header's bearer token with the configured one in
// constant time: both are hashed first, so neither the length nor a prefix
// of the token shows in the time taken.
func (b *bearer) ok(header string) bool {
	scheme, tok, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" || b.sum == nil {
		return false
	}
	sum := sha256.Sum256([]byte(tok))
	return subtle.ConstantTimeCompare(sum[:], b.sum) == 1
}

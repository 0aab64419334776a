package admin

import (
	_ "embed"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"time"
)

// ErrUnknownReplica is what Source.SetHeld returns for a name that is not
// in the fleet.
var ErrUnknownReplica = errors.New("no replica of that name")

// Source is what the fleet view reads and acts on: the gateway.
type Source interface {
	// Fleet returns the snapshot at now.
	Fleet(now time.Time) Fleet
	// SetHeld drains the replica named name by hand (held) or gives it
	// back to its health checks, and reports whether that changed
	// anything; ErrUnknownReplica for a name not in the fleet.
	SetHeld(name string, held bool) (changed bool, err error)
}

// Options configure the fleet view. The zero value serves every route
// without a token.
type Options struct {
	// Token, when not empty, is required as "Authorization: Bearer" by
	// every /api/ route, GETs included; compared in constant time. The
	// page at / holds no data and is served without it.
	Token string
	// Log gets a line for every action taken; nil discards them.
	Log *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Tools, when not nil, serves GET /api/tools (what each replica's
	// tools are against the lock), behind the token like every /api/ route.
	Tools http.Handler
}

//go:embed static/index.html
var page []byte

// Register adds the fleet view's routes to mux: GET / (the page), GET
// /api/fleet, POST /api/replicas/{name}/drain and .../resume.
func Register(mux *http.ServeMux, src Source, o *Options) {
	if o == nil {
		o = &Options{}
	}
	h := &handler{src: src, log: o.Log, now: o.Now}
	if o.Token != "" {
		h.token = newBearer(o.Token)
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.now == nil {
		h.now = time.Now
	}
	mux.HandleFunc("GET /{$}", h.servePage)
	mux.HandleFunc("GET /api/fleet", h.authorized(h.serveFleet))
	mux.HandleFunc("POST /api/replicas/{name}/drain", h.authorized(h.action(true)))
	mux.HandleFunc("POST /api/replicas/{name}/resume", h.authorized(h.action(false)))
	if o.Tools != nil {
		mux.HandleFunc("GET /api/tools", h.authorized(o.Tools.ServeHTTP))
	}
}

type handler struct {
	src   Source
	token *bearer // Options.Token; nil when none is required
	log   *slog.Logger
	now   func() time.Time
}

func (h *handler) servePage(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	// The page loads nothing from elsewhere and may be framed by no one.
	w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Write(page)
}

func (h *handler) serveFleet(w http.ResponseWriter, _ *http.Request) {
	f := h.src.Fleet(h.now())
	for i := range f.Replicas {
		// Lists are [] when empty, as the schema says, whoever filled them.
		r := &f.Replicas[i]
		if r.Checks == nil {
			r.Checks = []LastCheck{}
		}
		if r.RecentErrors == nil {
			r.RecentErrors = []Failure{}
		}
	}
	writeJSON(w, http.StatusOK, f)
}

// action drains (held) or resumes the replica the path names.
func (h *handler) action(held bool) http.HandlerFunc {
	verb := "resumed"
	if held {
		verb = "drained"
	}
	return func(w http.ResponseWriter, r *http.Request) {
		if !sameOrigin(r) {
			writeJSON(w, http.StatusForbidden, errorBody{"a request from another site's page"})
			return
		}
		name := r.PathValue("name")
		changed, err := h.src.SetHeld(name, held)
		if errors.Is(err, ErrUnknownReplica) {
			writeJSON(w, http.StatusNotFound, errorBody{"no replica of that name"})
			return
		}
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, errorBody{err.Error()})
			return
		}
		if changed {
			h.log.Info("replica "+verb+" by hand", "replica", name, "remote", r.RemoteAddr)
		}
		writeJSON(w, http.StatusOK, actionBody{Replica: name, Held: held, Changed: changed})
	}
}

type actionBody struct {
	Replica string `json:"replica"`
	Held    bool   `json:"held"`
	Changed bool   `json:"changed"`
}

type errorBody struct {
	Error string `json:"error"`
}

// authorized wraps next with the bearer token check when one is set: a
// request without it, or with another, is 401 and reaches nothing.
func (h *handler) authorized(next http.HandlerFunc) http.HandlerFunc {
	if h.token == nil {
		return next
	}
	return h.token.wrap(next)
}

// sameOrigin refuses an action a browser sends from another site's page
// (a form posted cross-site carries its Origin): without a token, the
// admin port on loopback would otherwise be any page's to drain.
func sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return r.Header.Get("Sec-Fetch-Site") != "cross-site"
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host == r.Host
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "encoding: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

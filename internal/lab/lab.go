// Package lab serves the fleet lab in a browser: one page, its assets
// embedded, backed by the simulator (package sim) in-process behind a small
// JSON API (docs/LAB.md). The engine runs ten minutes of traffic in a few
// milliseconds, so a loopback round trip per change keeps the page under its
// redraw goal, and the page and `mcpfleet sim` share one code path.
package lab

import (
	"embed"
	"io/fs"
	"net/http"
	"runtime"
	"time"
)

//go:embed static
var static embed.FS

// Options configure the lab's handler. A nil *Options means the defaults.
type Options struct {
	// MaxConcurrentRuns bounds simulations (and checks of an uploaded
	// result) running at once; zero means one per CPU. A request beyond it
	// waits for a free run.
	MaxConcurrentRuns int
}

// Handler is the lab: the page at / and the JSON API under /api/.
type Handler struct {
	mux  *http.ServeMux
	runs chan struct{} // a token per simulation or result check allowed to run at once
}

var _ http.Handler = (*Handler)(nil)

// New returns the lab's handler.
func New(opts *Options) *Handler {
	n := runtime.GOMAXPROCS(0)
	if opts != nil && opts.MaxConcurrentRuns > 0 {
		n = opts.MaxConcurrentRuns
	}
	h := &Handler{mux: http.NewServeMux(), runs: make(chan struct{}, n)}
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree always has static/
	}
	h.mux.Handle("GET /", noCache(http.FileServerFS(sub)))
	h.mux.HandleFunc("GET /api/defaults", h.defaults)
	h.mux.HandleFunc("GET /api/missions", h.missions)
	h.mux.HandleFunc("POST /api/run", h.run)
	h.mux.HandleFunc("GET /api/run", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Allow", http.MethodPost)
		writeJSON(w, http.StatusMethodNotAllowed, apiError{Error: "POST a scenario to /api/run"})
	})
	h.mux.HandleFunc("POST /api/validate", h.validate)
	h.mux.HandleFunc("GET /api/validate", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Allow", http.MethodPost)
		writeJSON(w, http.StatusMethodNotAllowed, apiError{Error: "POST a result to /api/validate"})
	})
	return h
}

// ServeHTTP serves the page and the API.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:")
	h.mux.ServeHTTP(w, r)
}

// NewServer returns an http.Server for the lab on addr with timeouts on
// every phase of a request (a run takes milliseconds; a mission's
// evaluation six runs).
func NewServer(addr string, h http.Handler) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    16 << 10,
	}
}

// noCache makes the browser revalidate the page's assets, so a rebuilt
// binary is seen on reload.
func noCache(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		next.ServeHTTP(w, r)
	})
}

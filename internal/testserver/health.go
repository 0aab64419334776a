package testserver

import (
	"net/http"
)

// serveHealth answers /health: 200 {"status":"ok"}, or 503
// {"status":"draining"} once the server is draining. Responses are never
// cached, so a balancer sees the change at once.
func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		// RFC 9110 §15.5.6: a 405 response must list the allowed methods.
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	status, body := http.StatusOK, `{"status":"ok"}`
	if s.draining.Load() {
		status, body = http.StatusServiceUnavailable, `{"status":"draining"}`
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if r.Method == http.MethodGet {
		_, _ = w.Write([]byte(body + "\n"))
	}
}

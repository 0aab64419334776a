package testserver

import (
	"encoding/json"
	"net/http"
)

// healthBody is the JSON body of /health.
type healthBody struct {
	// Status is "ok", or "draining" once the server is draining.
	Status string `json:"status"`
	// Running counts the tool calls running now.
	Running int `json:"running"`
	// Queued counts the tool calls waiting for a slot (Options.Slots).
	Queued int `json:"queued"`
}

// serveHealth answers /health: 200 {"status":"ok","running":R,"queued":Q},
// or 503 {"status":"draining",...} once the server is draining, where R
// counts the tool calls running and Q those waiting for a slot, so that a
// load generator can sample them. Responses are never cached, so a balancer
// sees the change at once.
func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		// RFC 9110 §15.5.6: a 405 response must list the allowed methods.
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	status, body := http.StatusOK, healthBody{Status: "ok"}
	if s.draining.Load() {
		status, body.Status = http.StatusServiceUnavailable, "draining"
	}
	body.Running, body.Queued = s.Load()
	b, _ := json.Marshal(body) // a string and two ints: it cannot fail
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if r.Method == http.MethodGet {
		_, _ = w.Write(append(b, '\n'))
	}
}

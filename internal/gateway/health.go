package gateway

import "net/http"

// serveHealthz answers liveness for balancers in front: 200 ok, or 503
// draining once SetDraining was called, so they stop sending new work.
func (g *Gateway) serveHealthz(w http.ResponseWriter) {
	if g.draining.Load() {
		writeStatus(w, http.StatusServiceUnavailable, `{"status":"draining"}`)
		return
	}
	writeStatus(w, http.StatusOK, `{"status":"ok"}`)
}

// serveReadyz answers 200 when some replica can take new work.
func (g *Gateway) serveReadyz(w http.ResponseWriter) {
	s := g.fleet.Snapshot()
	for i := range s.Len() {
		if s.Eligible(i) && !g.draining.Load() {
			writeStatus(w, http.StatusOK, `{"status":"ready"}`)
			return
		}
	}
	writeStatus(w, http.StatusServiceUnavailable, `{"status":"not ready"}`)
}

func writeStatus(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write([]byte(body + "\n"))
}

package testserver

import (
	"context"
	"net/http"
	"sync"
)

// inflight counts the /mcp requests that carry calls (every method but GET,
// whose standalone stream stays open for the whole session) so a drain can
// wait for them. The zero value is ready to use.
type inflight struct {
	mu   sync.Mutex    // guards n and idle
	n    int           // requests in flight
	idle chan struct{} // closed when n drops to 0; nil while n is 0
}

// track wraps next so that non-GET requests count as in flight while they
// are served.
func (f *inflight) track(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			f.add()
			defer f.done()
		}
		next.ServeHTTP(w, r)
	})
}

// add records one more request in flight.
func (f *inflight) add() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == 0 {
		f.idle = make(chan struct{})
	}
	f.n++
}

// done records that a request has finished.
func (f *inflight) done() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n--
	if f.n == 0 {
		close(f.idle)
		f.idle = nil
	}
}

// wait returns once no request is in flight, or when ctx ends.
func (f *inflight) wait(ctx context.Context) {
	f.mu.Lock()
	idle := f.idle
	f.mu.Unlock()
	if idle == nil {
		return
	}
	select {
	case <-idle:
	case <-ctx.Done():
	}
}

package h1

import (
	"net/http"
	"sync"
	"testing"
)

// TestDoCloseLeavesNoConnectionToReuse: a request marked Close (its
// replica is draining) closes the idle connections to its address before
// it goes out, goes on a new connection with "Connection: close", and
// leaves that connection closed rather than pooled, even though the
// server answered keep-alive; a request to another address keeps its own.
// Under a connection bound taken by the idle connection, it does not wait
// for itself.
func TestDoCloseLeavesNoConnectionToReuse(t *testing.T) {
	for _, maxConns := range []int{0, 1} {
		t.Run(map[int]string{0: "unbounded", 1: "one connection"}[maxConns], func(t *testing.T) {
			var mu sync.Mutex
			closeAsked := map[int][]bool{} // per connection, each request's Close
			record := func(n int, req *http.Request) string {
				mu.Lock()
				closeAsked[n] = append(closeAsked[n], req.Close)
				mu.Unlock()
				return okResponse
			}
			s := newServer(t, keepAlive(record))
			other := newServer(t, keepAlive(fixed(okResponse)))
			p, dials := testPool(t, 4)
			p.SetMaxConns(maxConns)

			do(t, p, s.addr, getReq())
			do(t, p, other.addr, getReq())
			if n := idleCount(p, s.addr); n != 1 {
				t.Fatalf("after a plain request: %d idle connections, want 1", n)
			}
			closing := getReq()
			closing.Close = true
			resp, body := do(t, p, s.addr, closing)
			if resp.StatusCode != 200 || body != "ok" {
				t.Fatalf("closing request: %d %q", resp.StatusCode, body)
			}
			s.waitClosed(t, 1) // the idle one, closed by the pool
			s.waitClosed(t, 2) // the closing request's own, after its answer
			if n := idleCount(p, s.addr); n != 0 {
				t.Errorf("after the closing request: %d idle connections to its address, want 0", n)
			}
			if n := idleCount(p, other.addr); n != 1 {
				t.Errorf("%d idle connections to the other address, want 1", n)
			}
			if n := dials.Load(); n != 3 {
				t.Errorf("pool dialled %d times, want 3 (one per connection)", n)
			}
			mu.Lock()
			defer mu.Unlock()
			if got := closeAsked[1]; len(got) != 1 || got[0] {
				t.Errorf("connection 1 carried requests with Close %v, want one plain request", got)
			}
			if got := closeAsked[2]; len(got) != 1 || !got[0] {
				t.Errorf("connection 2 carried requests with Close %v, want one request with Connection: close", got)
			}
		})
	}
}

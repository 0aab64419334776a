package gateway

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"
)

// TestForwardToLeavingReplicaClosesItsConnections: through both
// forwarders (internal/h1's pool and net/http's Transport), a request to
// a leaving replica goes on a new connection with "Connection: close",
// the idle connection an earlier request left is closed, and none stays
// open once the answer is read: nothing is left for the replica to close
// under a request.
func TestForwardToLeavingReplicaClosesItsConnections(t *testing.T) {
	for _, tc := range []struct {
		name string
		fwd  func() forwarder
	}{
		{"h1 pool", func() forwarder { return newLeanForwarder(dialer(time.Second, nil), 0, nil) }},
		{"net/http", func() forwarder { return newHTTPForwarder(dialer(time.Second, nil), nil) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var closeAsked []bool
			open := map[net.Conn]bool{}
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				closeAsked = append(closeAsked, r.Close)
				mu.Unlock()
				io.WriteString(w, "ok")
			}))
			srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
				mu.Lock()
				defer mu.Unlock()
				switch s {
				case http.StateNew:
					open[c] = true
				case http.StateClosed, http.StateHijacked:
					delete(open, c)
				}
			}
			srv.Start()
			defer srv.Close()
			u, _ := url.Parse(srv.URL + "/mcp")
			f := tc.fwd()
			defer f.(interface{ close() }).close()
			send := func(closing bool) {
				t.Helper()
				in := httptest.NewRequest(http.MethodPost, "/mcp", nil)
				resp, _, err := f.forwardAt(t.Context(), u, closing, in, []byte("{}"), "", "")
				if err != nil {
					t.Fatal(err)
				}
				io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			openConns := func() int {
				mu.Lock()
				defer mu.Unlock()
				return len(open)
			}
			send(false)
			if n := openConns(); n != 1 {
				t.Fatalf("after a request to an up replica: %d connections open, want its kept-alive one", n)
			}
			send(true)
			deadline := time.Now().Add(5 * time.Second)
			for openConns() != 0 {
				if time.Now().After(deadline) {
					t.Fatalf("%d connections still open after a request to the leaving replica, want 0", openConns())
				}
				time.Sleep(5 * time.Millisecond)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(closeAsked) != 2 || closeAsked[0] || !closeAsked[1] {
				t.Errorf("requests asked to close: %v, want [false true]", closeAsked)
			}
		})
	}
}

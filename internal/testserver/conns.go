package testserver

import (
	"net"
	"net/http"
	"sync"
)

// idleNew tracks the connections that have not yet sent a request byte
// (http.StateNew). http.Server.Shutdown counts such a connection as busy for
// five seconds, and HTTP clients often hold one spare in their pool, so a
// drain closes them itself once no call is in flight. The zero value is ready
// to use.
type idleNew struct {
	mu    sync.Mutex            // guards conns
	conns map[net.Conn]struct{} // connections in StateNew
}

// track is an http.Server.ConnState hook.
func (n *idleNew) track(c net.Conn, state http.ConnState) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if state != http.StateNew {
		delete(n.conns, c)
		return
	}
	if n.conns == nil {
		n.conns = make(map[net.Conn]struct{})
	}
	n.conns[c] = struct{}{}
}

// closeAll closes the connections still in StateNew. A client whose
// connection is closed before it wrote a request retries on another.
func (n *idleNew) closeAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for c := range n.conns {
		_ = c.Close() // closing is all that is wanted; an error changes nothing
		delete(n.conns, c)
	}
}

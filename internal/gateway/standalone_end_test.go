package gateway

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// getCounter counts the GETs a handler has answered.
type getCounter struct {
	h    http.Handler
	gets atomic.Int32
}

func (c *getCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.h.ServeHTTP(w, r)
	if r.Method == http.MethodGet {
		c.gets.Add(1)
	}
}

// TestStandaloneReconnectToAnEndingGateway: a gateway that has ended its
// standalone streams (its shutdown has begun, EndStandaloneStreams) may
// still take a GET: a client's reconnection on a connection it kept, or
// its first GET sent just before. That GET used to be forwarded under a
// context already ended and answered 502, and the SDK client, which takes
// any failed reconnection of its standalone stream as its session broken,
// failed every later call ("standalone SSE stream: Bad Gateway"). Now it
// gets the stream such a gateway ends itself: open, then at once one last
// event with an ID and the retry (SEP-1699), so the client reconnects after
// the delay, to the process that takes this one's place; the session goes
// on.
func TestStandaloneReconnectToAnEndingGateway(t *testing.T) {
	specs := twoReplicas(t)
	gw := startGatewayOn(t, specs, &Options{Keyring: keyring(t, 1), ResumeRetry: 20 * time.Millisecond}, io.Discard)
	front := &getCounter{h: gw}
	srv := httptest.NewServer(front)
	defer srv.Close()
	cs := connect(t, srv.URL+"/mcp", "2025-11-25", nil)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	gw.EndStandaloneStreams()
	// The client's stream ends with the retry; its reconnections, each
	// after 20 ms, reach this gateway again. A client that took one as
	// its session broken reconnects no more: the wait ends at its bound.
	before := front.gets.Load()
	for deadline := time.Now().Add(5 * time.Second); front.gets.Load() < before+3 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatalf("tools/list once the standalone stream reconnected to the ending gateway: %v", err)
	}
}

// TestGetAfterStandaloneStreamsEnded: the answer to a standalone GET once
// the gateway has ended its standalone streams is a stream that ends at
// once with an ID and the retry; another gateway with the key takes the
// reconnection with that ID to the session's replica.
func TestGetAfterStandaloneStreamsEnded(t *testing.T) {
	specs := twoReplicas(t)
	keys := keyring(t, 1)
	gwA := startGatewayOn(t, specs, &Options{Keyring: keys}, io.Discard)
	a := httptest.NewServer(gwA)
	t.Cleanup(a.Close) // after the streams' bodies close (r.get)
	r := newRaw(t, a.URL+"/mcp", "2025-11-25")
	r.initialize()
	gwA.EndStandaloneStreams()

	var id string
	retries := 0
	for line := range r.get(t, "") { // ends: the gateway wrote its last event
		if v, ok := strings.CutPrefix(line, "id: "); ok {
			id = v
		}
		if line == "retry: 1000" {
			retries++
		}
	}
	if id == "" || retries != 1 {
		t.Fatalf("the stream gave id %q and %d retry fields: want an id and one retry: 1000", id, retries)
	}

	gwB := startGatewayOn(t, specs, &Options{Keyring: keys}, io.Discard)
	b := httptest.NewServer(gwB)
	t.Cleanup(b.Close)
	r.url = b.URL + "/mcp"
	select { // the replica's stream is open: its first bytes come through
	case <-r.get(t, id):
	case <-time.After(5 * time.Second):
		t.Fatal("the reconnection through another gateway sent nothing in 5 s")
	}
}

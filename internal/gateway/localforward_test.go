package gateway

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// nextForwarder records what the local forwarder hands on.
type nextForwarder struct{ calls []string }

func (n *nextForwarder) forward(context.Context, *upstream.Replica, *http.Request, []byte, string, string) (*http.Response, bool, error) {
	n.calls = append(n.calls, "forward")
	return nil, false, errors.New("next")
}

func (n *nextForwarder) forwardAt(_ context.Context, u *url.URL, _ bool, in *http.Request, _ []byte, _, target string) (*http.Response, bool, error) {
	n.calls = append(n.calls, in.Method+" "+u.Host+" "+target)
	return nil, false, errors.New("next")
}

func localFixture(h http.Handler) (*localForwarder, *nextForwarder) {
	next := &nextForwarder{}
	return &localForwarder{
		local: func(host string) http.Handler {
			if host == "kid.stdio.invalid" {
				return h
			}
			return nil
		},
		next: next,
		log:  slog.New(slog.DiscardHandler),
	}, next
}

var kidURL = &url.URL{Scheme: "http", Host: "kid.stdio.invalid", Path: "/mcp"}

// TestLocalForwarderPosts: a POST to a local host reaches its handler with
// the fields a replica gets and the replica's session ID, and its answer
// comes back whole; anything else goes to the next forwarder.
func TestLocalForwarderPosts(t *testing.T) {
	var got *http.Request
	var gotBody string
	f, next := localFixture(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		b, _ := io.ReadAll(r.Body)
		gotBody = string(b)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		w.Write([]byte(`{"ok":true}`))
		w.Header().Set("X-After", "late") // after the head: not sent
	}))
	in := httptest.NewRequest(http.MethodPost, "http://gw/mcp", nil)
	in.Header.Set("Mcp-Session-Id", "sealed-by-the-gateway")
	in.Header.Set("Connection", "X-Hop")
	in.Header.Set("X-Hop", "1")
	in.Header.Set("Authorization", "Bearer t")
	resp, delivered, err := f.forwardAt(context.Background(), kidURL, false, in, []byte(`{"jsonrpc":"2.0"}`), "replica-own", "")
	if err != nil || !delivered {
		t.Fatalf("%v, delivered %v", err, delivered)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(b) != `{"ok":true}` || resp.StatusCode != http.StatusAccepted || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("answer %d %v %q, %v", resp.StatusCode, resp.Header, b, err)
	}
	if resp.Header.Get("X-After") != "" {
		t.Error("a field set after the head went out was sent")
	}
	if got.Header.Get("Mcp-Session-Id") != "replica-own" || got.Header.Get("X-Hop") != "" || got.Header.Get("Connection") != "" ||
		got.Header.Get("Authorization") != "Bearer t" || gotBody != `{"jsonrpc":"2.0"}` || got.URL.Path != "/mcp" {
		t.Errorf("the handler got %v %v body %q", got.URL, got.Header, gotBody)
	}
	for _, c := range []struct {
		method, target string
		u              *url.URL
	}{
		{http.MethodGet, "", kidURL},
		{http.MethodDelete, "", kidURL},
		{http.MethodPost, "/messages?sessionId=1", kidURL},
		{http.MethodPost, "", &url.URL{Scheme: "http", Host: "replica:3000", Path: "/mcp"}},
	} {
		f.forwardAt(context.Background(), c.u, false, httptest.NewRequest(c.method, "http://gw/mcp", nil), nil, "", c.target)
	}
	want := []string{"GET kid.stdio.invalid ", "DELETE kid.stdio.invalid ", "POST kid.stdio.invalid /messages?sessionId=1", "POST replica:3000 "}
	if strings.Join(next.calls, "|") != strings.Join(want, "|") {
		t.Errorf("handed on %q, want %q", next.calls, want)
	}
}

// TestLocalForwarderStream: a streamed answer arrives event by event, and
// closing its body ends the handler's request.
func TestLocalForwarderStream(t *testing.T) {
	ended := make(chan struct{})
	f, _ := localFixture(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("data: 1\n\n"))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(ended)
	}))
	resp, _, err := f.forwardAt(context.Background(), kidURL, false, httptest.NewRequest(http.MethodPost, "http://gw/mcp", nil), nil, "", "")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, err := resp.Body.Read(buf)
	if err != nil || string(buf[:n]) != "data: 1\n\n" {
		t.Fatalf("first event %q, %v", buf[:n], err)
	}
	resp.Body.Close()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the handler's request did not end when the body was closed")
	}
}

// TestLocalForwarderPanic: a handler that panics fails the call, and the
// process goes on; one that panics after its head ends the body with an
// error.
func TestLocalForwarderPanic(t *testing.T) {
	f, _ := localFixture(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }))
	if _, delivered, err := f.forwardAt(context.Background(), kidURL, false, httptest.NewRequest(http.MethodPost, "http://gw/mcp", nil), nil, "", ""); !errors.Is(err, errLocalPanic) || !delivered {
		t.Fatalf("%v, delivered %v; want errLocalPanic, delivered", err, delivered)
	}
	f, _ = localFixture(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("part"))
		panic("boom")
	}))
	resp, _, err := f.forwardAt(context.Background(), kidURL, false, httptest.NewRequest(http.MethodPost, "http://gw/mcp", nil), nil, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(resp.Body); !errors.Is(err, errLocalPanic) {
		t.Errorf("reading the body of a handler that panicked: %v, want errLocalPanic", err)
	}
}

// TestLocalForwarderCancel: a call whose context ends before the handler
// answers returns the context's error, and the handler's request ends.
func TestLocalForwarderCancel(t *testing.T) {
	ended := make(chan struct{})
	f, _ := localFixture(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
		close(ended)
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, _, err := f.forwardAt(ctx, kidURL, false, httptest.NewRequest(http.MethodPost, "http://gw/mcp", nil), nil, "", ""); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%v, want the deadline", err)
	}
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the handler's request did not end with the call's context")
	}
}

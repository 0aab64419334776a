package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// heard is what a client session heard from its server: the URIs of
// resource updates and the text of log messages.
type heard struct {
	mu      sync.Mutex
	updates []string
	logs    []string
}

func (h *heard) has(f func(*heard) bool) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return f(h)
}

func (h *heard) logged(s string) bool {
	return h.has(func(h *heard) bool {
		return slices.ContainsFunc(h.logs, func(l string) bool { return strings.Contains(l, s) })
	})
}

func (h *heard) updated(uri string) bool {
	return h.has(func(h *heard) bool { return slices.Contains(h.updates, uri) })
}

func connectHearing(ctx context.Context, t *testing.T, gw string) (*mcp.ClientSession, *heard) {
	t.Helper()
	h := &heard{}
	c := mcp.NewClient(&mcp.Implementation{Name: "stdio-subscribe-test", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			h.mu.Lock()
			h.updates = append(h.updates, r.Params.URI)
			h.mu.Unlock()
		},
		//lint:ignore SA1019 the everything server tells what it heard in log messages, which a 2025-11-25 session still carries
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			h.mu.Lock()
			h.logs = append(h.logs, fmt.Sprint(r.Params.Data))
			h.mu.Unlock()
		},
	})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + gw + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, h
}

// TestStdioSubscriptionsThroughServe: three sessions on one pooled child
// of the TypeScript everything server (which logs each subscribe and
// unsubscribe it receives): the child hears a URI's subscribe from the
// first session only, each session gets the updates of the URIs it
// subscribed to and no other, and the child hears the unsubscribe from the
// last holder, a session that ended counting as unsubscribed.
func TestStdioSubscriptionsThroughServe(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	node, modules := nodeTools(t)
	gw := serveEverythingStdio(t, node, modules, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A log line of the child goes to the one session with a call in
	// flight, else to every session: b and c connect once a's subscribe
	// has been heard, so that its line cannot reach them.
	a, ha := connectHearing(ctx, t, gw)
	subscribe := func(cs *mcp.ClientSession, uri string) {
		t.Helper()
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatalf("subscribing to %s: %v", uri, err)
		}
	}
	subscribe(a, "test://x")
	waitFor(t, 5*time.Second, "the child hears the first subscribe of test://x", func() bool {
		return ha.logged("Subscribe Resource request for URI: test://x")
	})
	b, hb := connectHearing(ctx, t, gw)
	c, hc := connectHearing(ctx, t, gw)
	subscribe(b, "test://x")
	subscribe(c, "test://y")
	waitFor(t, 5*time.Second, "the child hears the first subscribe of test://y", func() bool {
		return hc.logged("Subscribe Resource request for URI: test://y")
	})
	if _, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "toggle-subscriber-updates", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the updates of test://x and test://y", func() bool {
		return ha.updated("test://x") && hb.updated("test://x") && hc.updated("test://y")
	})
	if ha.updated("test://y") || hb.updated("test://y") || hc.updated("test://x") {
		t.Errorf("an update reached a session not subscribed to it: a %v, b %v, c %v", ha.updates, hb.updates, hc.updates)
	}
	if hb.logged("test://x") {
		t.Errorf("the child heard b's subscribe of a URI it holds already: %q", hb.logs)
	}
	b.Close() // b's end leaves a the last holder of test://x
	if err := a.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "test://x"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the child hears the last holder's unsubscribe", func() bool {
		return ha.logged("Unsubscribe Resource request: test://x")
	})
	// The last holder of test://y ends: the gateway unsubscribes, while a
	// has a call in flight, so that the child's line reaches a.
	done := make(chan error, 1)
	go func() {
		_, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "trigger-long-running-operation", Arguments: map[string]any{"duration": 2, "steps": 2}})
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	c.Close()
	waitFor(t, 5*time.Second, "the child hears test://y unsubscribed at c's end", func() bool {
		return ha.logged("Unsubscribe Resource request: test://y")
	})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

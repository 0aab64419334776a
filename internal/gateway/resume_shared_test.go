package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/store"
	"github.com/mcpfleet/mcpfleet/internal/store/redistest"
	"github.com/mcpfleet/mcpfleet/internal/streams"
	"github.com/mcpfleet/mcpfleet/internal/streams/redisstreams"
	"github.com/mcpfleet/mcpfleet/internal/testproc"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// sharedPair is two gateway processes in front of one fleet, with one
// keyring and one stream buffer in a real redis-server, behind a balancer
// that sends every resume (a GET with Last-Event-ID) to the second.
type sharedPair struct {
	*fleet          // the fleet and gateway A
	b      *Gateway // gateway B, which serves the resumes
	url    string   // the balancer
}

func startSharedPair(t testing.TB) *sharedPair {
	t.Helper()
	client, err := store.NewRedisClient("redis://" + redistest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	opts := func() *Options {
		return &Options{KeepAlive: 200 * time.Millisecond, Keyring: keyring(t, 1),
			Streams: redisstreams.New(client, "test:stream:", streams.Options{TTL: time.Minute})}
	}
	f := startFleet(t, 2, opts())
	var specs []upstream.Spec
	for i, s := range f.servers {
		specs = append(specs, upstream.Spec{Name: s.Name(), URL: f.replicas[i].URL + "/mcp"})
	}
	b := startGatewayOn(t, specs, opts(), &syncBuffer{})
	frontB := newFront(b)
	t.Cleanup(frontB.Close)
	return &sharedPair{fleet: f, b: b, url: resumesTo(t, f.front.URL, frontB.URL)}
}

// resumesTo is a balancer in front of two gateways: every resume (a GET
// with Last-Event-ID) goes to the one at b, everything else to a.
func resumesTo(t testing.TB, a, b string) string {
	toA, toB := mustParse(t, a), mustParse(t, b)
	lb := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			if r.In.Method == http.MethodGet && r.In.Header.Get(lastEventID) != "" {
				r.SetURL(toB)
				return
			}
			r.SetURL(toA)
		},
		FlushInterval: -1,
	})
	t.Cleanup(lb.Close)
	return lb.URL
}

func mustParse(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// callAcrossCut calls a tool through the balancer as a 2025-11-25 client
// whose connection is cut after cut, and returns the result's text.
func (p *sharedPair) callAcrossCut(t *testing.T, cut time.Duration, name string, args map[string]any, copts *mcp.ClientOptions) string {
	t.Helper()
	proxy := testproc.NewFlakyProxy(t, strings.TrimPrefix(p.url, "http://"))
	cs := connect(t, "http://"+proxy.Addr()+"/mcp", "2025-11-25", copts)
	cutAfter(proxy, cut)
	return callWithProgress(t, cs, name, args).Content[0].(*mcp.TextContent).Text
}

// replayedByB fails unless gateway B served the one resume and A none.
func (p *sharedPair) replayedByB(t *testing.T) {
	t.Helper()
	for _, g := range []struct {
		name string
		gw   *Gateway
		want float64
	}{{"A", p.gw, 0}, {"B", p.b, 1}} {
		if n := testutil.ToFloat64(g.gw.streamMetrics.resumes.WithLabelValues("replayed")); n != g.want {
			t.Errorf("gateway %s replayed %v resumes, want %v", g.name, n, g.want)
		}
	}
}

// TestResumeThroughAnotherGateway: a legacy client cut in the middle of a
// sleep with progress through gateway A resumes through gateway B, which
// replays from the shared buffer every event A relayed after the cut, once
// and in order, then the result.
func TestResumeThroughAnotherGateway(t *testing.T) {
	p := startSharedPair(t)
	progress := &progressLog{}
	got := p.callAcrossCut(t, 1200*time.Millisecond, "sleep", map[string]any{"seconds": 3, "progress_every": 0.1},
		&mcp.ClientOptions{ProgressNotificationHandler: progress.handler})
	if !strings.HasPrefix(got, "slept 3s") {
		t.Fatalf("result %q", got)
	}
	n := relayedEvents(t, p.logs) - 1
	progress.check(t, n, n)
	p.replayedByB(t)
}

// TestResumeMutateRunsOnceThroughAnotherGateway: a mutate cut through A
// before its only event resumes through B from A's priming event, gets its
// result, and mutates once.
func TestResumeMutateRunsOnceThroughAnotherGateway(t *testing.T) {
	p := startSharedPair(t)
	got := p.callAcrossCut(t, 500*time.Millisecond, "mutate", map[string]any{"key": "k", "seconds": 2, "at": 0.8}, nil)
	if !strings.HasPrefix(got, "mutated k") {
		t.Fatalf("result %q", got)
	}
	if n := p.count("k"); n != 1 {
		t.Errorf("mutate ran %d times, want 1", n)
	}
	p.replayedByB(t)
}

// TestResumeFromPrimingThroughAnotherGateway: a client that drops its
// stream right after the gateway's priming event, and resumes through B at
// once, before the call has sent anything, finds the stream in the shared
// buffer (A put it there, empty, when its client went) rather than a 410,
// and gets the result; the mutate ran once.
func TestResumeFromPrimingThroughAnotherGateway(t *testing.T) {
	p := startSharedPair(t)
	r := newRaw(t, p.url+"/mcp", "2025-11-25")
	r.initialize()
	resp := r.post(context.Background(), 2, "tools/call", map[string]any{
		"name": "mutate", "arguments": map[string]any{"key": "k", "seconds": 3, "at": 0.3},
	}, nil)
	var priming string
	for l := range lines(resp.Body) {
		if id, ok := strings.CutPrefix(l, "id: "); ok {
			priming = id
			break
		}
	}
	resp.Body.Close() // the client goes before the call's only event
	if priming == "" {
		t.Fatal("no priming event")
	}
	var result string
	for l := range r.get(t, priming) {
		if strings.Contains(l, `"mutated k`) {
			result = l
			break
		}
	}
	if result == "" {
		t.Fatal("the resumed stream ended without the result")
	}
	if n := p.count("k"); n != 1 {
		t.Errorf("mutate ran %d times, want 1", n)
	}
	p.replayedByB(t)
}

package load

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// idempotencyMeta is the _meta member that names a logical call, read by
// the gateway and the testserver alike (docs/GATEWAY.md, "Idempotency").
const idempotencyMeta = "io.mcpfleet/idempotency-key"

// client is one of the scenario's clients: its own connection pool and
// bearer token (the caller a balancer hashes and a limit counts), and one
// SDK session at a time, replaced when the fleet says it is gone.
type client struct {
	n       int
	url     string
	version string
	hc      *http.Client
	meter   *meter

	mu  sync.Mutex // guards cs and gen
	cs  *mcp.ClientSession
	gen int

	closing sync.WaitGroup
}

func newClient(n int, url, version string, m *meter) *client {
	tr := &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second}
	c := &client{n: n, url: url, version: version, meter: m}
	c.hc = &http.Client{Transport: &instrumented{client: n, token: fmt.Sprintf("load-client-%d", n), next: tr, m: m}}
	return c
}

// session returns the current session, connecting one if there is none.
func (c *client) session(ctx context.Context) (*mcp.ClientSession, int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cs != nil {
		return c.cs, c.gen, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	sdk := mcp.NewClient(&mcp.Implementation{Name: "mcpfleet-load", Version: "1"}, nil)
	// No standalone GET stream: the model's clients hold only their calls'
	// streams, so that every cut, resume and 404 counted is a call's.
	cs, err := sdk.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: c.url, HTTPClient: c.hc, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: c.version})
	if err != nil {
		return nil, c.gen, fmt.Errorf("connecting: %w", err)
	}
	c.meter.connected(c.n)
	c.cs = cs
	return cs, c.gen, nil
}

// drop forgets session generation gen, if it is still the current one.
func (c *client) drop(gen int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen || c.cs == nil {
		return
	}
	old := c.cs
	c.cs, c.gen = nil, c.gen+1
	c.closing.Go(func() { _ = old.Close() })
}

func (c *client) close() {
	c.mu.Lock()
	if c.cs != nil {
		cs := c.cs
		c.closing.Go(func() { _ = cs.Close() })
	}
	c.mu.Unlock()
	c.closing.Wait()
	c.hc.CloseIdleConnections()
}

// answer is what one attempt's HTTP exchanges said, filled in by the
// instrumented transport through the attempt's context.
type answer struct {
	mu         sync.Mutex
	status     int           // the tools/call POST's status
	retryAfter time.Duration // a 429's hint
}

type answerKey struct{}

func (a *answer) set(status int, retryAfter time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.status, a.retryAfter = status, retryAfter
}

func (a *answer) get() (int, time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.status, a.retryAfter
}

// instrumented is a client's transport: it adds the bearer token and
// counts what the fleet answered, as a client sees it.
type instrumented struct {
	client int
	token  string
	next   http.RoundTripper
	m      *meter
}

var (
	toolsCall  = []byte(`"method":"tools/call"`)
	retryAfter = regexp.MustCompile(`"retryAfterMs":\s*(\d+)`)
)

// RoundTrip sends r with the token and records its answer.
func (t *instrumented) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	call := false
	if r.Method == http.MethodPost && r.GetBody != nil {
		if b, err := r.GetBody(); err == nil {
			body, _ := io.ReadAll(io.LimitReader(b, 1<<20))
			b.Close()
			call = bytes.Contains(body, toolsCall)
		}
	}
	resume := r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") != ""
	resp, err := t.next.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	switch {
	case resp.StatusCode == http.StatusNotFound && (call || resume):
		t.m.notFound(t.client)
	case resp.StatusCode == http.StatusTooManyRequests && call:
		wait := time.Second
		if b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10)); err == nil {
			resp.Body.Close()
			resp.Body = io.NopCloser(bytes.NewReader(b))
			if m := retryAfter.FindSubmatch(b); m != nil {
				ms, _ := strconv.Atoi(string(m[1]))
				wait = time.Duration(ms) * time.Millisecond
			}
		}
		t.m.refused(t.client)
		if a, ok := r.Context().Value(answerKey{}).(*answer); ok {
			a.set(resp.StatusCode, wait)
		}
		return resp, nil
	case resp.StatusCode == http.StatusBadGateway || resp.StatusCode == http.StatusServiceUnavailable:
		t.m.unroutable()
	case resume && resp.StatusCode == http.StatusOK:
		t.m.resumed(r.Header.Get("Authorization"), r.Header.Get("Last-Event-ID"))
	case call:
		// It reached a replica: an execution, whether its answer comes
		// or its stream is cut (the cutter's 504).
		t.m.admitted(t.client)
	}
	if a, ok := r.Context().Value(answerKey{}).(*answer); ok && call {
		a.set(resp.StatusCode, 0)
	}
	return resp, nil
}

// errSessionGone is an SDK error that means the session must be opened again.
func sessionGone(err error) bool {
	return errors.Is(err, mcp.ErrSessionMissing) || errors.Is(err, mcp.ErrConnectionClosed) ||
		strings.Contains(strings.ToLower(err.Error()), "session not found")
}

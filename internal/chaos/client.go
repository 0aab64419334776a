package chaos

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// idempotencyMeta is the _meta member that names a logical call, read by
// the gateway and the testserver alike (docs/GATEWAY.md, "Idempotency").
const idempotencyMeta = "io.mcpfleet/idempotency-key"

// codeSessionNotFound is the JSON-RPC code of a 404 for an unknown session.
const codeSessionNotFound = -32001

// client is one MCP client: its own HTTP connection pool and bearer token
// (so the gateway sees distinct callers), and one SDK session at a time,
// replaced when the gateway says it is gone.
type client struct {
	url     string
	version string
	hc      *http.Client

	mu  sync.Mutex // guards cs and gen
	cs  *mcp.ClientSession
	gen int // bumped each time cs is dropped

	connects atomic.Int64 // sessions opened, the first included
	closing  sync.WaitGroup
}

// newClient returns client number i of the run, not yet connected.
func newClient(i int, url, version string) *client {
	rt := &bearer{token: fmt.Sprintf("chaos-client-%d", i), next: &http.Transport{
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     30 * time.Second,
	}}
	return &client{url: url, version: version, hc: &http.Client{Transport: rt}}
}

// session returns the current session, connecting one if there is none.
func (c *client) session(ctx context.Context) (*mcp.ClientSession, int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cs != nil {
		return c.cs, c.gen, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	sdk := mcp.NewClient(&mcp.Implementation{Name: "mcpfleet-chaos", Version: "1"}, nil)
	cs, err := sdk.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: c.url, HTTPClient: c.hc},
		&mcp.ClientSessionOptions{ProtocolVersion: c.version})
	if err != nil {
		return nil, c.gen, fmt.Errorf("connecting: %w", err)
	}
	c.connects.Add(1)
	c.cs = cs
	return cs, c.gen, nil
}

// drop forgets session generation gen, if it is still the current one, so
// that the next call reconnects (2025-11-25 §Session Management: on 404 the
// client starts a new session).
func (c *client) drop(gen int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen || c.cs == nil {
		return
	}
	old := c.cs
	c.cs, c.gen = nil, c.gen+1
	c.closing.Go(func() { _ = old.Close() }) // the session is gone already
}

// close ends the current session and waits for dropped ones to close.
func (c *client) close() {
	c.mu.Lock()
	if c.cs != nil {
		c.closing.Go(func() { _ = c.cs.Close() })
	}
	c.mu.Unlock()
	c.closing.Wait()
	c.hc.CloseIdleConnections()
}

// bearer adds a client's own Authorization header: the gateway's routing
// key for the caller.
type bearer struct {
	token string
	next  http.RoundTripper
}

// RoundTrip sends r with the token.
func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// Kinds of attempt outcome.
const (
	kindOK       = "ok"
	kindNotFound = "session_not_found" // 404 / -32001
	kindLost     = "session_lost"      // the SDK closed the session: its stream got 404
	kindTimeout  = "timeout"
	kindError    = "error" // a JSON-RPC or transport error, or a tool error
)

// attempt is one try of a logical call, times from the start of traffic.
type attempt struct {
	Start time.Duration `json:"start"`
	End   time.Duration `json:"end"`
	Kind  string        `json:"kind"`
	Err   string        `json:"error,omitempty"`
	// Killed is set afterwards: the attempt failed and was running when its
	// replica was cut.
	Killed bool `json:"killed,omitempty"`
}

// call sends one attempt of c on cl and classifies the answer.
func (cl *client) call(ctx context.Context, spec *callSpec, keys bool, timeout time.Duration, t0 time.Time) attempt {
	a := attempt{Start: time.Since(t0)}
	cs, gen, err := cl.session(ctx)
	if err != nil {
		a.End, a.Kind, a.Err = time.Since(t0), classify(err), err.Error()
		if a.Kind == kindNotFound || a.Kind == kindLost {
			cl.drop(gen)
		}
		return a
	}
	params := &mcp.CallToolParams{Name: spec.tool, Arguments: spec.arguments()}
	if keys {
		params.Meta = mcp.Meta{idempotencyMeta: spec.key}
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := cs.CallTool(actx, params)
	a.End = time.Since(t0)
	switch {
	case err != nil && actx.Err() != nil && ctx.Err() == nil:
		a.Kind, a.Err = kindTimeout, err.Error()
	case err != nil:
		a.Kind, a.Err = classify(err), err.Error()
	case res.IsError:
		a.Kind, a.Err = kindError, "tool error: "+resultText(res)
	default:
		a.Kind = kindOK
	}
	if a.Kind == kindNotFound || a.Kind == kindLost {
		cl.drop(gen)
	}
	return a
}

// classify names the kind of a call's error.
func classify(err error) string {
	var we *jsonrpc.Error
	switch {
	case errors.Is(err, mcp.ErrSessionMissing),
		errors.As(err, &we) && we.Code == codeSessionNotFound,
		strings.Contains(strings.ToLower(err.Error()), "session not found"):
		return kindNotFound
	case errors.Is(err, mcp.ErrConnectionClosed):
		return kindLost
	}
	return kindError
}

// resultText returns the text contents of res, joined.
func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

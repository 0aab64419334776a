package testserver

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Protocol versions the SDK client can ask for.
const (
	legacyVersion = "2025-11-25"
	modernVersion = "2026-07-28"
)

// startServer starts a test server for era on an httptest server on
// loopback and returns it with its base URL.
func startServer(t *testing.T, name, era string) (*Server, string) {
	t.Helper()
	s, err := New(name, &Options{Era: era})
	if err != nil {
		t.Fatalf("New(%q, era %q): %v", name, era, err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return s, hs.URL
}

// connect connects an SDK client asking for version to the /mcp endpoint at
// base. The session is closed when the test ends.
func connect(t *testing.T, ctx context.Context, base, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	cs, err := dial(ctx, base, version, opts, nil)
	if err != nil {
		t.Fatalf("connecting with %s to %s: %v", version, base, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// dial connects an SDK client asking for version to the /mcp endpoint at
// base, sending through hc when it is not nil.
func dial(ctx context.Context, base, version string, opts *mcp.ClientOptions, hc *http.Client) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1.0.0"}, opts)
	transport := &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: hc}
	return client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: version})
}

// callText calls tool with args, requires success, and returns the text of
// its only content.
func callText(t *testing.T, ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("calling %s: %v", tool, err)
	}
	if res.IsError {
		t.Fatalf("calling %s: tool error: %v", tool, contentText(t, res))
	}
	return contentText(t, res)
}

// contentText returns the text of res's only content.
func contentText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("result has %d contents, want 1: %+v", len(res.Content), res.Content)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("result content is %T, want *mcp.TextContent", res.Content[0])
	}
	return tc.Text
}

// exchange is what a recorder saw of one HTTP exchange.
type exchange struct {
	method        string // HTTP method
	reqVersion    string // Mcp-Protocol-Version sent
	reqSession    string // Mcp-Session-Id sent
	status        int
	mintedSession string // Mcp-Session-Id answered
}

// recorder is an http.RoundTripper that records the MCP headers of each
// exchange.
type recorder struct {
	mu        sync.Mutex // guards exchanges
	exchanges []exchange
}

// RoundTrip sends r with the default transport and records the exchange.
func (rec *recorder) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.exchanges = append(rec.exchanges, exchange{
		method:        r.Method,
		reqVersion:    r.Header.Get(headerProtocolVersion),
		reqSession:    r.Header.Get(headerSessionID),
		status:        resp.StatusCode,
		mintedSession: resp.Header.Get(headerSessionID),
	})
	return resp, nil
}

// seen returns a copy of the exchanges recorded so far.
func (rec *recorder) seen() []exchange {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]exchange(nil), rec.exchanges...)
}

// startWith starts a server called name with opts on an httptest server on
// loopback and returns it with its base URL.
func startWith(t *testing.T, name string, opts *Options) (*Server, string) {
	t.Helper()
	s, err := New(name, opts)
	if err != nil {
		t.Fatalf("New(%q, %+v): %v", name, opts, err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return s, hs.URL
}

// withAuth is an http.RoundTripper that sends every request with the
// Authorization header auth, or none when auth is empty.
type withAuth struct{ auth string }

// RoundTrip sends a copy of r carrying the header.
func (a withAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if a.auth != "" {
		r.Header.Set("Authorization", a.auth)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// rawCall posts one 2026-07-28 request of method with params to /mcp at
// base, with the Authorization header auth unless it is empty, and returns
// the JSON-RPC result and the whole response body. It fails the test on a
// JSON-RPC error.
func rawCall(t *testing.T, ctx context.Context, base, method string, params map[string]any, auth string) (map[string]any, string) {
	t.Helper()
	params = maps.Clone(params) // callers may share theirs
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    modernVersion,
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
	}
	h := http.Header{}
	h.Set(headerProtocolVersion, modernVersion)
	h.Set("Mcp-Method", method)
	if name, ok := params["name"].(string); ok {
		h.Set("Mcp-Name", name)
	} else if uri, ok := params["uri"].(string); ok {
		h.Set("Mcp-Name", uri)
	}
	if auth != "" {
		h.Set("Authorization", auth)
	}
	resp := postMCP(t, ctx, base, map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params}, h)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer to %s: %v", method, err)
	}
	return rpcResult(t, method, raw), string(raw)
}

// postMCP posts msg to /mcp at base as a client of Streamable HTTP does,
// with the headers h besides, and returns the response, whose body the
// caller closes.
func postMCP(t *testing.T, ctx context.Context, base string, msg map[string]any, h http.Header) *http.Response {
	t.Helper()
	body, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mcp", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h.Clone()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("posting %v: %v", msg["method"], err)
	}
	return resp
}

// rpcResult returns the result of the JSON-RPC response in raw, a JSON body
// or an SSE stream, failing the test on an error or when there is none.
func rpcResult(t *testing.T, method string, raw []byte) map[string]any {
	t.Helper()
	payloads := [][]byte{raw}
	if !bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
		payloads = nil
		for line := range bytes.Lines(raw) {
			if data, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				payloads = append(payloads, data)
			}
		}
	}
	for _, p := range payloads {
		var msg struct {
			Result map[string]any  `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(p, &msg); err != nil {
			continue
		}
		if msg.Error != nil {
			t.Fatalf("%s: JSON-RPC error %s", method, msg.Error)
		}
		if msg.Result != nil {
			return msg.Result
		}
	}
	t.Fatalf("%s: no JSON-RPC result in %q", method, raw)
	return nil
}

package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/h1"
	"github.com/mcpfleet/mcpfleet/internal/testserver"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fleet is a gateway in front of real testserver replicas, all on loopback.
type fleet struct {
	servers  []*testserver.Server
	replicas []*httptest.Server
	gw       *Gateway
	front    *frontServer
	logs     *syncBuffer
}

func (f *fleet) url() string { return f.front.URL + "/mcp" }

// count sums a key's mutations over every replica.
func (f *fleet) count(key string) int {
	n := 0
	for _, s := range f.servers {
		n += s.Count(key)
	}
	return n
}

// startFleet starts n testserver replicas and a gateway in front of them.
func startFleet(t testing.TB, n int, opts *Options) *fleet {
	t.Helper()
	f := &fleet{logs: &syncBuffer{}}
	var specs []upstream.Spec
	for i := range n {
		name := fmt.Sprintf("replica-%c", 'a'+i)
		s, err := testserver.New(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(s.Handler())
		t.Cleanup(hs.Close)
		f.servers = append(f.servers, s)
		f.replicas = append(f.replicas, hs)
		specs = append(specs, upstream.Spec{Name: name, URL: hs.URL + "/mcp"})
	}
	f.gw = startGatewayOn(t, specs, opts, f.logs)
	f.front = newFront(f.gw)
	t.Cleanup(f.front.Close)
	return f
}

func startGatewayOn(t testing.TB, specs []upstream.Spec, opts *Options, logs io.Writer) *Gateway {
	t.Helper()
	fl, err := upstream.New(specs)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := New(fl, slog.New(slog.NewJSONHandler(logs, nil)), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.Close)
	return gw
}

// connect opens an SDK client session through the gateway at the given
// protocol version ("" means the SDK's latest, 2026-07-28).
func connect(t *testing.T, url, version string, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, copts)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connecting at %q: %v", version, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// callText calls a tool and returns its first text content.
func callText(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("calling %s: %v", name, err)
	}
	if res.IsError || len(res.Content) == 0 {
		t.Fatalf("calling %s: error result %+v", name, res)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

// syncBuffer is a bytes.Buffer safe for the gateway's concurrent log writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// raw is a hand-made HTTP exchange, for what the SDK client hides (keep-alive
// comments, dropped streams, error bodies).
type raw struct {
	t       testing.TB
	url     string
	version string // Mcp-Protocol-Version
	session string
	client  *http.Client
}

func newRaw(t testing.TB, url, version string) *raw {
	// No connection reuse: closing a body must close its connection.
	return &raw{t: t, url: url, version: version, client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
}

// post sends one JSON-RPC message; for 2026-07-28 it adds the SEP-2243
// headers and the _meta version, unless hdr overrides them.
func (r *raw) post(ctx context.Context, id int, method string, params map[string]any, hdr map[string]string) *http.Response {
	r.t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	msg := map[string]any{"jsonrpc": "2.0", "method": method, "params": params}
	if id != 0 {
		msg["id"] = id
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	if r.version != "" {
		h.Set("Mcp-Protocol-Version", r.version)
	}
	if r.version == "2026-07-28" {
		meta, _ := params["_meta"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
		}
		meta["io.modelcontextprotocol/protocolVersion"] = r.version
		meta["io.modelcontextprotocol/clientCapabilities"] = map[string]any{}
		params["_meta"] = meta
		h.Set("Mcp-Method", method)
		if name, ok := params["name"].(string); ok {
			h.Set("Mcp-Name", name)
		}
	}
	if r.session != "" {
		h.Set("Mcp-Session-Id", r.session)
	}
	for k, v := range hdr {
		h.Set(k, v)
	}
	body, _ := json.Marshal(msg)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.url, bytes.NewReader(body))
	req.Header = h
	resp, err := r.client.Do(req)
	if err != nil {
		r.t.Fatalf("posting %s: %v", method, err)
	}
	return resp
}

// initialize opens a legacy session by hand.
func (r *raw) initialize() {
	r.t.Helper()
	resp := r.post(context.Background(), 1, "initialize", map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "raw", "version": "1"},
	}, nil)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	r.session = resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || r.session == "" {
		r.t.Fatalf("initialize: status %d, session %q", resp.StatusCode, r.session)
	}
	resp = r.post(context.Background(), 0, "notifications/initialized", nil, nil)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// rpcError reads a JSON-RPC error answer.
func rpcError(t *testing.T, resp *http.Response) (code int, msg string) {
	t.Helper()
	defer resp.Body.Close()
	var v struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("answer is not a JSON-RPC error: %q", b)
	}
	return v.Error.Code, v.Error.Message
}

// lines reads an SSE body line by line into a channel until it ends.
func lines(body io.Reader) <-chan string {
	ch := make(chan string, 64)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(body)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}

func hasPrefixLine(all []string, prefix string) int {
	n := 0
	for _, l := range all {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

// frontServer serves a gateway on a loopback port the way mcpfleet serve
// does: with internal/h1's server (server: h1, the default), or with
// net/http's when MCPFLEET_TEST_SERVER=std (server: std), so that the
// end-to-end tests run behind both.
type frontServer struct {
	URL string
	srv interface{ Close() error } // *h1.Server or *http.Server
}

// testServer is MCPFLEET_TEST_SERVER: "h1" (or unset) or "std".
func testServer() string {
	switch v := os.Getenv("MCPFLEET_TEST_SERVER"); v {
	case "", "h1":
		return "h1"
	case "std":
		return "std"
	default:
		panic(fmt.Sprintf("MCPFLEET_TEST_SERVER=%q: want h1 or std", v))
	}
}

// newFront serves h with the front server MCPFLEET_TEST_SERVER names.
func newFront(h http.Handler) *frontServer {
	return newFrontOn(testServer(), h)
}

// newFrontOn serves h with the named front server, h1 or std. The std one
// is net/http's as mcpfleet serve sets it up without TLS: HTTP/1.1 only.
func newFrontOn(server string, h http.Handler) *frontServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	return newFrontListener(server, h, ln)
}

// newFrontListener serves h on ln with the named front server.
func newFrontListener(server string, h http.Handler, ln net.Listener) *frontServer {
	f := &frontServer{URL: "http://" + ln.Addr().String()}
	if server == "std" {
		s := &http.Server{
			Handler:           CloseAfterChunked(h),
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       time.Minute,
			ErrorLog:          log.New(io.Discard, "", 0),
			Protocols:         new(http.Protocols),
		}
		s.Protocols.SetHTTP1(true)
		go func() { _ = s.Serve(ln) }()
		f.srv = s
		return f
	}
	s := &h1.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	go func() { _ = s.Serve(ln) }()
	f.srv = s
	return f
}

func (f *frontServer) Close() { f.srv.Close() }

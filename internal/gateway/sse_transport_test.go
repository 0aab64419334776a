package gateway

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mgclient "github.com/mark3labs/mcp-go/client"
	mgtransport "github.com/mark3labs/mcp-go/client/transport"
	mgmcp "github.com/mark3labs/mcp-go/mcp"
	mgserver "github.com/mark3labs/mcp-go/server"
	"github.com/mcpfleet/mcpfleet/internal/session"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The 2024-11-05 HTTP+SSE transport through the gateway, against mcp-go's
// SSE server and client (a 2024-11-05 implementation from another
// codebase, widely used).

// sseReplica is one mcp-go SSE server on loopback.
type sseReplica struct {
	name     string
	srv      *httptest.Server
	sessions sync.Map // the session IDs it minted
	posts    atomic.Int64
}

// startSSEReplicas starts n mcp-go SSE servers, each with a whoami tool
// that answers its replica's name. Their endpoint events are absolute URLs
// (WithBaseURL), as mcp-go's README sets them up.
func startSSEReplicas(t *testing.T, n int) ([]*sseReplica, []upstream.Spec) {
	t.Helper()
	var reps []*sseReplica
	var specs []upstream.Spec
	for i := range n {
		rep := &sseReplica{name: fmt.Sprintf("sse-%c", 'a'+i)}
		ms := mgserver.NewMCPServer(rep.name, "1")
		ms.AddTool(mgmcp.NewTool("whoami"), func(context.Context, mgmcp.CallToolRequest) (*mgmcp.CallToolResult, error) {
			return mgmcp.NewToolResultText(rep.name), nil
		})
		rep.srv = httptest.NewUnstartedServer(nil)
		base := "http://" + rep.srv.Listener.Addr().String()
		var seq atomic.Int64
		sse := mgserver.NewSSEServer(ms, mgserver.WithBaseURL(base),
			mgserver.WithSessionIDGenerator(func(context.Context, *http.Request) (string, error) {
				id := fmt.Sprintf("%s-own-session-%d", rep.name, seq.Add(1))
				rep.sessions.Store(id, true)
				return id, nil
			}))
		rep.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				rep.posts.Add(1)
			}
			sse.ServeHTTP(w, r)
		})
		rep.srv.Start()
		t.Cleanup(rep.srv.Close)
		reps = append(reps, rep)
		specs = append(specs, upstream.Spec{Name: rep.name, URL: base + "/mcp"}) // sse_url: the default, base + /sse
	}
	return reps, specs
}

// sharedSecretOptions are the options of gateway processes that share a
// secret file: one keyring, one routing salt.
func sharedSecretOptions(t *testing.T) *Options {
	t.Helper()
	k, err := session.NewKeyring([]session.Key{{ID: 3, Secret: [32]byte{1, 2, 3}}})
	if err != nil {
		t.Fatal(err)
	}
	return &Options{Keyring: k, RoutingSalt: []byte("shared-salt-0123456789")}
}

// startGateways starts n gateways in front of specs, sharing a secret, each
// behind its own front server.
func startGateways(t *testing.T, n int, specs []upstream.Spec, opts *Options) ([]*Gateway, []*frontServer, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	var gws []*Gateway
	var fronts []*frontServer
	for range n {
		gw := startGatewayOn(t, specs, opts, logs)
		front := newFront(gw)
		t.Cleanup(front.Close)
		gws, fronts = append(gws, gw), append(fronts, front)
	}
	return gws, fronts, logs
}

// alternatingPosts sends each POST to the next of hosts in turn, and
// every other request where it was going: a client whose messages reach
// the gateway processes by turns, as behind an L4 balancer.
type alternatingPosts struct {
	hosts []string
	next  atomic.Int64
	mu    sync.Mutex
	sent  map[string]int // POSTs per host
}

func (a *alternatingPosts) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost {
		host := a.hosts[int(a.next.Add(1)-1)%len(a.hosts)]
		req = req.Clone(req.Context())
		req.URL.Host, req.Host = host, host
		a.mu.Lock()
		a.sent[host]++
		a.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(req)
}

// TestSSETransportThroughTwoGateways is the Done-when of the 2024-11-05
// transport with mcp-go: its SSE client opens the session through gateway
// A and POSTs alternately through A and B, in front of three mcp-go SSE
// replicas: 20 calls on one session all succeed, each answered by the
// session's replica, and the client never sees the replica's address or
// its own session ID.
func TestSSETransportThroughTwoGateways(t *testing.T) {
	reps, specs := startSSEReplicas(t, 3)
	gws, fronts, logs := startGateways(t, 2, specs, sharedSecretOptions(t))
	a, b := strings.TrimPrefix(fronts[0].URL, "http://"), strings.TrimPrefix(fronts[1].URL, "http://")
	alt := &alternatingPosts{hosts: []string{a, b}, sent: map[string]int{}}
	c, err := mgclient.NewSSEMCPClient(fronts[0].URL+"/sse", mgtransport.WithHTTPClient(&http.Client{Transport: alt}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mgmcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2024-11-05"
	init.Params.ClientInfo = mgmcp.Implementation{Name: "sse-test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}

	endpoint := mgclient.GetEndpoint(c)
	if endpoint.Host != a || endpoint.Path != "/messages" {
		t.Errorf("endpoint = %s, want gateway A's /messages", endpoint)
	}
	for _, rep := range reps {
		if strings.Contains(endpoint.String(), rep.srv.Listener.Addr().String()) || strings.Contains(endpoint.String(), rep.name) {
			t.Errorf("endpoint %s shows replica %s", endpoint, rep.name)
		}
	}

	seen := map[string]int{}
	for i := range 20 {
		req := mgmcp.CallToolRequest{}
		req.Params.Name = "whoami"
		res, err := c.CallTool(ctx, req)
		if err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
		if res.IsError || len(res.Content) == 0 {
			t.Fatalf("call %d: error result %+v", i+1, res)
		}
		seen[res.Content[0].(mgmcp.TextContent).Text]++
	}
	if len(seen) != 1 {
		t.Errorf("calls of one session reached several replicas: %v", seen)
	}
	alt.mu.Lock()
	t.Logf("replies by replica %v; POSTs through gateway A %d, B %d", seen, alt.sent[a], alt.sent[b])
	if alt.sent[a] < 10 || alt.sent[b] < 10 {
		t.Errorf("POSTs by gateway: %v, want both used", alt.sent)
	}
	alt.mu.Unlock()
	var owner *sseReplica
	for _, rep := range reps {
		if rep.posts.Load() > 0 {
			if owner != nil {
				t.Errorf("POSTs reached %s and %s", owner.name, rep.name)
			}
			owner = rep
		}
	}
	owner.sessions.Range(func(id, _ any) bool {
		if strings.Contains(endpoint.String(), id.(string)) {
			t.Errorf("endpoint %s shows the replica's session id %s", endpoint, id)
		}
		return true
	})
	for i, gw := range gws {
		if n := testutil.ToFloat64(gw.metrics.requests.WithLabelValues("tools/call", "2024-11-05", owner.name, "ok")); n < 10 {
			t.Errorf("gateway %d counted %v tools/call with era 2024-11-05, want 10", i, n)
		}
	}
	if !strings.Contains(logs.String(), `"era":"2024-11-05"`) {
		t.Error(`no access log line says "era":"2024-11-05"`)
	}
}

// sseOpen opens a 2024-11-05 stream through a gateway by hand and returns
// the stream's lines and the endpoint the gateway named.
func sseOpen(t *testing.T, base string) (<-chan string, string, func()) {
	t.Helper()
	return sseOpenAs(t, base, "")
}

// sseOpenAs is sseOpen with the credential authz ("" for none).
func sseOpenAs(t *testing.T, base, authz string) (<-chan string, string, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/sse", nil)
	req.Header.Set("Accept", "text/event-stream")
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /sse: %s", resp.Status)
	}
	ch := lines(resp.Body)
	stop := func() { cancel(); resp.Body.Close() }
	t.Cleanup(stop)
	timeout := time.After(10 * time.Second)
	for event := ""; ; {
		select {
		case l, ok := <-ch:
			if !ok {
				t.Fatal("stream ended before its endpoint event")
			}
			switch {
			case l == "event: endpoint":
				event = "endpoint"
			case event == "endpoint" && strings.HasPrefix(l, "data: "):
				return ch, strings.TrimPrefix(l, "data: "), stop
			}
		case <-timeout:
			t.Fatal("no endpoint event")
		}
	}
}

// ssePost POSTs one JSON-RPC message to a gateway's endpoint.
func ssePost(t *testing.T, base, endpoint, body string) (int, string) {
	t.Helper()
	return ssePostAs(t, base, endpoint, body, "")
}

// ssePostAs is ssePost with the credential authz ("" for none).
func ssePostAs(t *testing.T, base, endpoint, body, authz string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+endpoint, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestSSELostSessions: every way a 2024-11-05 message cannot reach its
// session is answered by the gateway, 404 with -32001 for a lost session
// and 400 for a query that is not one sessionId, and counted with the
// session reasons.
func TestSSELostSessions(t *testing.T) {
	_, specs := startSSEReplicas(t, 2)
	gws, fronts, _ := startGateways(t, 1, specs, sharedSecretOptions(t))
	base := fronts[0].URL
	_, endpoint, _ := sseOpen(t, base)
	token := strings.TrimPrefix(endpoint, "/messages?sessionId=")
	flip := byte('A')
	if token[20] == 'A' {
		flip = 'B'
	}
	tampered := token[:20] + string(flip) + token[21:]
	sid, _ := gws[0].keys.Seal(session.Claims{Replica: "sse-a", SessionID: "x"}, strings.NewReader(strings.Repeat("n", 12)))
	// A gateway whose fleet lacks the replicas, with the same key.
	others, _ := startSSEReplicas(t, 1)
	_, elsewhere, _ := startGateways(t, 1, []upstream.Spec{{Name: "elsewhere", URL: others[0].srv.URL + "/mcp"}}, sharedSecretOptions(t))
	const call = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"whoami"}}`
	tests := []struct {
		name, base, query string
		status, code      int
		reason            string
	}{
		{"tampered", base, "sessionId=" + tampered, 404, -32001, "tampered"},
		{"a sealed session id", base, "sessionId=" + sid, 404, -32001, "malformed"},
		{"empty", base, "sessionId=", 404, -32001, "malformed"},
		{"escaped", base, "sessionId=%41" + token[1:], 404, -32001, "malformed"},
		{"replica gone", elsewhere[0].URL, "sessionId=" + token, 404, -32001, "replica_gone"},
		{"no query", base, "", 400, -32600, ""},
		{"another parameter", base, "sessionId=" + token + "&x=1", 400, -32600, ""},
		{"twice", base, "sessionId=" + token + "&sessionId=" + token, 400, -32600, ""},
		{"other spelling", base, "sessionid=" + token, 400, -32600, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := http.Post(tt.base+"/messages?"+tt.query, "application/json", strings.NewReader(call))
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.status)
			}
			if code, _ := rpcError(t, resp); code != tt.code {
				t.Errorf("JSON-RPC code %d, want %d", code, tt.code)
			}
		})
	}
	misses := gws[0].metrics.sessionMisses
	for reason, want := range map[string]float64{"tampered": 1, "malformed": 3} {
		if n := testutil.ToFloat64(misses.WithLabelValues(reason)); n != want {
			t.Errorf("session misses %q = %v, want %v", reason, n, want)
		}
	}
	if status, _ := ssePost(t, base, endpoint, call); status != http.StatusAccepted {
		t.Errorf("the real endpoint after all that: %d, want 202", status)
	}
	resp, err := http.Get(base + endpoint)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
		t.Errorf("GET on the messages path: %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
}

// TestSSEDrainingReplicaKeepsItsSessions: a replica drained for new work
// still gets its open sessions' messages, and new streams go elsewhere.
func TestSSEDrainingReplicaKeepsItsSessions(t *testing.T) {
	reps, specs := startSSEReplicas(t, 2)
	gws, fronts, _ := startGateways(t, 1, specs, sharedSecretOptions(t))
	_, endpoint, _ := sseOpen(t, fronts[0].URL)
	const ping = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	if status, _ := ssePost(t, fronts[0].URL, endpoint, ping); status != http.StatusAccepted {
		t.Fatalf("ping: %d", status)
	}
	var owner *sseReplica
	for _, rep := range reps {
		if rep.posts.Load() == 1 {
			owner = rep
		}
	}
	// Passive reports act under a running checker's policy; this one
	// checks once, then not for an hour.
	checker, err := upstream.NewChecker(gws[0].fleet, &upstream.CheckOptions{Interval: time.Hour, Timeout: time.Second, Mode: upstream.CheckHTTP}) // the MCP proof would add POSTs of its own
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go checker.Run(ctx)
	rep := gws[0].fleet.Snapshot().Lookup(owner.name)
	// The checker's first check decides a replica's state (it has passed
	// none yet): report draining once it is done, not before it lands.
	for deadline := time.Now().Add(5 * time.Second); rep.LastCheck() == nil; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("replica %s: no check within 5 s", owner.name)
		}
	}
	for deadline := time.Now().Add(5 * time.Second); rep.State() != upstream.StateDraining; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("replica %s is %v, want draining", owner.name, rep.State())
		}
		rep.ReportDraining() // a no-op until the checker runs
	}
	if status, _ := ssePost(t, fronts[0].URL, endpoint, ping); status != http.StatusAccepted || owner.posts.Load() != 2 {
		t.Errorf("ping to the draining replica's session: %d, %d POSTs there", status, owner.posts.Load())
	}
	for range 3 {
		_, ep, stop := sseOpen(t, fronts[0].URL)
		ssePost(t, fronts[0].URL, ep, ping)
		stop()
	}
	if owner.posts.Load() != 2 {
		t.Errorf("new streams reached the draining replica (%d POSTs)", owner.posts.Load())
	}
}

// TestSSEKeepAlivesOnASilentStream: after its endpoint event a 2024-11-05
// stream is silent until a message is answered; keep-alive comments flow
// as on every stream.
func TestSSEKeepAlivesOnASilentStream(t *testing.T) {
	_, specs := startSSEReplicas(t, 1)
	opts := sharedSecretOptions(t)
	opts.KeepAlive = 50 * time.Millisecond
	gws, fronts, _ := startGateways(t, 1, specs, opts)
	ch, _, stop := sseOpen(t, fronts[0].URL)
	timeout := time.After(5 * time.Second)
	for n := 0; n < 3; {
		select {
		case l := <-ch:
			if l == ": keep-alive" {
				n++
			}
		case <-timeout:
			t.Fatalf("%d keep-alive comments in 5 s", n)
		}
	}
	stop()
	// The next keep-alive written to the gone client fails and ends the
	// stream: well within a few seconds, however loaded the machine.
	deadline := time.Now().Add(10 * time.Second)
	for testutil.ToFloat64(gws[0].metrics.streams) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%v streams still open 10 s after their client left", testutil.ToFloat64(gws[0].metrics.streams))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// pythonStyleReplica is a 2024-11-05 server that names its endpoint as the
// Python SDK does: relative, a trailing slash, session_id. It answers a
// POST 202 "Accepted" and puts a message on the stream.
func pythonStyleReplica(t *testing.T) (*httptest.Server, chan string) {
	t.Helper()
	got := make(chan string, 4)
	events := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/sse":
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Mcp-Session-Id", "must-not-leak")
			io.WriteString(w, ": hello\r\n\r\nevent: endpoint\r\ndata: /messages/?session_id=0f5e8a7c9b\r\nid: 1\r\n\r\n")
			w.(http.Flusher).Flush()
			for {
				select {
				case ev := <-events:
					io.WriteString(w, ev)
					w.(http.Flusher).Flush()
				case <-r.Context().Done():
					return
				}
			}
		case r.Method == http.MethodPost && r.URL.Path == "/messages/":
			body, _ := io.ReadAll(r.Body)
			got <- r.URL.RawQuery + " " + string(body)
			w.WriteHeader(http.StatusAccepted)
			io.WriteString(w, "Accepted")
			events <- "event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\r\n\r\n"
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

// TestSSEPythonStyleEndpoint: an endpoint of another shape (the Python
// SDK's /messages/?session_id=) is sealed and restored whole; the endpoint
// event is otherwise byte for byte the replica's, and so are the 202 and
// the events after it.
func TestSSEPythonStyleEndpoint(t *testing.T) {
	srv, got := pythonStyleReplica(t)
	_, fronts, _ := startGateways(t, 2, []upstream.Spec{{Name: "py", URL: srv.URL + "/mcp"}}, sharedSecretOptions(t))
	req, _ := http.NewRequest(http.MethodGet, fronts[0].URL+"/sse", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Mcp-Session-Id") != "" {
		t.Error("the replica's Mcp-Session-Id reached the client")
	}
	br := bufio.NewReader(resp.Body)
	readEvent := func() string {
		var b strings.Builder
		for {
			line, err := br.ReadString('\n')
			b.WriteString(line)
			if err != nil || line == "\r\n" {
				return b.String()
			}
		}
	}
	if ev := readEvent(); ev != ": hello\r\n\r\n" {
		t.Errorf("first event %q", ev)
	}
	ev := readEvent()
	prefix, suffix := "event: endpoint\r\ndata: /messages?sessionId=", "\r\nid: 1\r\n\r\n"
	if !strings.HasPrefix(ev, prefix) || !strings.HasSuffix(ev, suffix) || strings.Contains(ev, "0f5e8a7c9b") {
		t.Fatalf("endpoint event %q", ev)
	}
	endpoint := strings.TrimSuffix(strings.TrimPrefix(ev, "event: endpoint\r\ndata: "), suffix)
	status, body := ssePost(t, fronts[1].URL, endpoint, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	if status != http.StatusAccepted || body != "Accepted" {
		t.Errorf("POST through gateway B: %d %q", status, body)
	}
	if g := <-got; g != `session_id=0f5e8a7c9b {"jsonrpc":"2.0","id":1,"method":"ping"}` {
		t.Errorf("the replica got %q", g)
	}
	if ev := readEvent(); ev != "event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\r\n\r\n" {
		t.Errorf("answer event %q", ev)
	}
}

func TestEndpointTarget(t *testing.T) {
	sseURL, _ := url.Parse("http://10.0.0.5:3001/v1/sse")
	tests := []struct {
		name, data, want string
		err              error
	}{
		{"TypeScript SDK", "/messages?sessionId=4b1e", "/messages?sessionId=4b1e", nil},
		{"mcp-go, full URL", "http://10.0.0.5:3001/message?sessionId=4b1e", "/message?sessionId=4b1e", nil},
		{"Python SDK", "/messages/?session_id=abc", "/messages/?session_id=abc", nil},
		{"relative to the SSE URL", "messages?s=1", "/v1/messages?s=1", nil},
		{"session in the path", "/s/4b1e/messages", "/s/4b1e/messages", nil},
		{"the client's origin", "https://gw.example.com/messages?sessionId=1", "/messages?sessionId=1", nil},
		{"another origin", "http://10.0.0.6:3001/messages?sessionId=1", "", errEndpointOrigin},
		{"network-path reference", "//evil.example/messages", "", errEndpointOrigin},
		{"not http", "ftp://10.0.0.5:3001/messages", "", errEndpointURI},
		{"opaque", "mailto:x@example.com", "", errEndpointURI},
		{"empty", "", "", errEndpointURI},
		{"a space in the query", "/messages?a b", "", errEndpointURI},
		{"two data lines", "/messages\n?sessionId=1", "", errEndpointURI},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := endpointTarget(tt.data, sseURL, "gw.example.com")
			if got != tt.want || err != tt.err {
				t.Errorf("endpointTarget(%q) = %q, %v; want %q, %v", tt.data, got, err, tt.want, tt.err)
			}
		})
	}
}

func TestReplaceData(t *testing.T) {
	for in, want := range map[string]string{
		"event: endpoint\ndata: /message?sessionId=1\r\n\r\n": "event: endpoint\ndata: NEW\r\n\r\n", // mcp-go's mixed line ends
		"event: endpoint\r\ndata:/m\r\n\r\n":                  "event: endpoint\r\ndata:NEW\r\n\r\n",
		"data: /m\nevent: endpoint\nid: 9\n\n":                "data: NEW\nevent: endpoint\nid: 9\n\n",
		": comment data: x\nevent: endpoint\ndata\n\n":        ": comment data: x\nevent: endpoint\ndata:NEW\n\n",
	} {
		if got := string(replaceData([]byte(in), "NEW")); got != want {
			t.Errorf("replaceData(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSSEReplicaLost: when the session's replica goes away, its stream
// ends and its messages get 404, -32001, counted replica_unreachable.
func TestSSEReplicaLost(t *testing.T) {
	reps, specs := startSSEReplicas(t, 1)
	gws, fronts, _ := startGateways(t, 1, specs, sharedSecretOptions(t))
	ch, endpoint, _ := sseOpen(t, fronts[0].URL)
	reps[0].srv.CloseClientConnections()
	reps[0].srv.Close()
	for range ch { // the stream ends
	}
	resp, err := http.Post(fronts[0].URL+endpoint, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := rpcError(t, resp); resp.StatusCode != http.StatusNotFound || code != -32001 {
		t.Errorf("message to a lost replica: %d, code %d; want 404, -32001", resp.StatusCode, code)
	}
	if n := testutil.ToFloat64(gws[0].metrics.sessionMisses.WithLabelValues("replica_unreachable")); n != 1 {
		t.Errorf("replica_unreachable counted %v times", n)
	}
}

// TestSSEMessageOfADepartedClient: a replica that never answers a message
// (the TypeScript everything server, for a session it lost) holds nothing
// once the client gives up: the POST upstream ends with the client's.
func TestSSEMessageOfADepartedClient(t *testing.T) {
	cut := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: endpoint\ndata: /message?sessionId=lost\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		io.ReadAll(r.Body)   // after which net/http notices a client that leaves
		<-r.Context().Done() // never answers
		close(cut)
	}))
	t.Cleanup(srv.Close)
	_, fronts, _ := startGateways(t, 1, []upstream.Spec{{Name: "ts", URL: srv.URL + "/mcp"}}, sharedSecretOptions(t))
	_, endpoint, _ := sseOpen(t, fronts[0].URL)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, fronts[0].URL+endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("the POST was answered %s", resp.Status)
	}
	select {
	case <-cut:
	case <-time.After(5 * time.Second):
		t.Fatal("the POST upstream outlived its client by 5 s")
	}
}

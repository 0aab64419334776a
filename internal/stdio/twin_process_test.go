package stdio

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// testServerEnv, set in a child's environment, makes the test binary a
// stdio server of the Go SDK (serveTestServer) instead of running tests.
const testServerEnv = "STDIO_TEST_SERVER"

// serveTestServer serves on stdin and stdout a server of the Go SDK with
// three tools: whoami, the NAME of its environment; ask, which asks for a
// name with an elicitation in a result (SEP-2322) until the call carries
// the answer; grow, which adds a tool (a tools list change). Each start appends a line to the file STARTS names.
func serveTestServer() int {
	if f, err := os.OpenFile(os.Getenv("STARTS"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
		_, _ = f.WriteString("start\n")
		f.Close()
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "twin-test", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "whoami", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: os.Getenv("NAME")}}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if r, ok := req.Params.InputResponses["name"].(*mcp.ElicitResult); ok && r.Action == "accept" {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello " + r.Content["name"].(string)}}}, nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
			"name": &mcp.ElicitParams{Message: "your name?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}},
		}}, nil
	})
	var grown atomic.Int32
	s.AddTool(&mcp.Tool{Name: "grow", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.AddTool(&mcp.Tool{Name: fmt.Sprintf("grown-%d", grown.Add(1)), InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
		return &mcp.CallToolResult{}, nil
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		return 1
	}
	return 0
}

// twinBridge serves a child called name running argv, with a stateless
// twin of the same command, on an HTTP test server; env is both
// children's, {child} their names. It returns the bridge and the
// server's MCP URL.
func twinBridge(t *testing.T, name string, argv []string, env map[string]string) (*Bridge, string) {
	t.Helper()
	opts := func(n string) Options {
		e, err := Environ(n, env, nil, os.Getenv, os.ReadFile)
		if err != nil {
			t.Fatal(err)
		}
		return Options{Name: n, Argv: argv, Env: e, Grace: 2 * time.Second, InitTimeout: 10 * time.Second, Backoff: Backoff{Min: 200 * time.Millisecond, Max: 2 * time.Second}}
	}
	c := startChild(t, name, argv, func(o *Options) { *o = opts(name) })
	twin := opts(name + TwinSuffix)
	b := NewBridge(c, 0, nil, &twin)
	srv := httptest.NewServer(b)
	t.Cleanup(func() {
		srv.Close()
		b.Close()
	})
	return b, srv.URL + mcpPath
}

// do2026 POSTs body as a 2026-07-28 client does, taking JSON or a stream.
func do2026(t *testing.T, ctx context.Context, url, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(headerProtocol, "2026-07-28")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// post2026 POSTs a 2026-07-28 request of method with params (the era's
// _meta added) and returns the status and the answer, read from an SSE
// stream's last event when it came on one.
func post2026(t *testing.T, url, method, params string) (int, map[string]any) {
	t.Helper()
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
	if params == "{}" {
		params = "{" + meta + "}"
	} else {
		params = strings.TrimSuffix(params, "}") + "," + meta + "}"
	}
	resp := do2026(t, context.Background(), url, `{"jsonrpc":"2.0","id":7,"method":"`+method+`","params":`+params+`}`)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if i := strings.LastIndex(string(b), "data: "); i >= 0 {
		b = []byte(strings.TrimSpace(string(b[i+len("data: "):])))
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s %s: %q: %v", method, params, b, err)
	}
	return resp.StatusCode, m
}

func lines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// TestTwinServesNatively: a replica's stateless twin starts at its first
// 2026-07-28 call, not before (a 2025-11-25 session, server/discover and
// tools/list, as the gateway's checks send them, run none), serves
// it in that era itself (an input_required result as the server wrote
// it, then the call completed with the answer), under a name of its own;
// its process group is gone once the bridge is closed.
func TestTwinServesNatively(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	dir := t.TempDir()
	b, url := twinBridge(t, "n-1", []string{os.Args[0]}, map[string]string{testServerEnv: "1", "NAME": "{child}", "STARTS": filepath.Join(dir, "{child}")})
	cs, err := b.child.Open()
	if err != nil {
		t.Fatal(err)
	}
	if got := text(callTool(t, cs, "1", "whoami", "{}", 5*time.Second)); got != "n-1" {
		t.Fatalf("a session's whoami: %q", got)
	}
	cs.Close()
	// What the gateway itself sends every replica starts no twin.
	for _, method := range []string{"server/discover", "tools/list"} {
		if status, m := post2026(t, url, method, `{}`); status != http.StatusOK || m["result"] == nil {
			t.Fatalf("%s before the twin: %d %v", method, status, m)
		}
	}
	if _, started := b.StatelessChild(); started || lines(t, filepath.Join(dir, "n-1-2026")) != 0 {
		t.Fatal("the twin started before a 2026-07-28 call")
	}
	status, m := post2026(t, url, "tools/call", `{"name":"ask","arguments":{}}`)
	res, _ := m["result"].(map[string]any)
	ask, _ := res["inputRequests"].(map[string]any)["name"].(map[string]any)
	if status != http.StatusOK || res["resultType"] != "input_required" || ask["method"] != "elicitation/create" {
		t.Fatalf("ask: %d %v, want an input_required result asking for elicitation", status, m)
	}
	if _, m = post2026(t, url, "tools/call", `{"name":"ask","arguments":{},"inputResponses":{"name":{"action":"accept","content":{"name":"Ada"}}}}`); text(m) != "hello Ada" {
		t.Errorf("ask with its answer: %v", m)
	}
	if _, m = post2026(t, url, "tools/call", `{"name":"whoami","arguments":{}}`); text(m) != "n-1"+TwinSuffix {
		t.Errorf("2026-07-28 whoami: %v, want the twin's name", m)
	}
	if _, m = post2026(t, url, "server/discover", `{}`); !strings.Contains(member(t, mustJSON(m), "result", "supportedVersions"), statelessVersion) {
		t.Errorf("server/discover: %v", m)
	}
	info, ok := b.StatelessChild()
	if !ok || info.Probe != "native" || info.PID == 0 || lines(t, filepath.Join(dir, "n-1-2026")) != 1 {
		t.Fatalf("twin: %+v, started %d times; want one native run", info, lines(t, filepath.Join(dir, "n-1-2026")))
	}
	b.Close()
	if left := groupMembers(t, info.PID); len(left) > 0 || groupAlive(info.PID) {
		t.Errorf("the twin's group %d: processes %v remain after Close", info.PID, left)
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// notNativeChild is a stdio server in sh of 2025-11-25 alone: it answers
// initialize, tools/list and tools/call (with "ran"), and server/discover
// as DISCOVER says: "error" with an error, "exit" by exiting, "silent" not
// at all. Each start appends a line to the file STARTS names.
const notNativeChild = `echo start >> "$STARTS"
while read l; do
	id=$(printf '%s\n' "$l" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
	case "$l" in
	*'"server/discover"'*) [ "$DISCOVER" = exit ] && exit 3
		[ "$DISCOVER" = silent ] && continue
		echo '{"jsonrpc":"2.0","id":"mcpfleet-discover","error":{"code":-32601,"message":"method not found"}}';;
	*'"initialize"'*) echo '{"jsonrpc":"2.0","id":"mcpfleet-initialize","result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"sh","version":"1"}}}';;
	*'"tools/list"'*) echo '{"jsonrpc":"2.0","id":'"$id"',"result":{"tools":[]}}';;
	*'"tools/call"'*) echo '{"jsonrpc":"2.0","id":'"$id"',"result":{"content":[{"type":"text","text":"ran"}]}}';;
	esac
done`

// TestTwinFallsBackOnce: a server that does not speak 2026-07-28 (it
// answers the twin's probe with an error, or exits) has its twin started
// once, at the first 2026-07-28 request, and stopped for good; that
// request, those beside it and those after are translated on the
// replica's child, with no second start.
func TestTwinFallsBackOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	for _, discover := range []string{"error", "exit"} {
		t.Run(discover, func(t *testing.T) {
			dir := t.TempDir()
			b, url := twinBridge(t, "o-1", []string{"sh", "-c", notNativeChild}, map[string]string{"DISCOVER": discover, "STARTS": filepath.Join(dir, "{child}")})
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					if status, m := post2026(t, url, "tools/call", `{"name":"t","arguments":{}}`); status != http.StatusOK || text(m) != "ran" || member(t, mustJSON(m), "result", "resultType") != `"complete"` {
						t.Errorf("a call beside the probe: %d %v, want it translated", status, m)
					}
				})
			}
			wg.Wait()
			for range 3 {
				if _, m := post2026(t, url, "tools/call", `{"name":"t","arguments":{}}`); text(m) != "ran" {
					t.Errorf("a later call: %v", m)
				}
			}
			info, ok := b.StatelessChild()
			if n := lines(t, filepath.Join(dir, "o-1-2026")); !ok || info.Probe != "refused" || n != 1 {
				t.Errorf("twin: %+v, started %d times; want one start, refused", info, n)
			}
			if n := lines(t, filepath.Join(dir, "o-1")); n != 1 {
				t.Errorf("the replica's child started %d times, want 1", n)
			}
		})
	}
}

// TestTwinSilentProbeHoldsNothing: a server that never answers the twin's
// probe (some answer no request before initialize) holds the first
// 2026-07-28 requests only for the twin's wait, not its init timeout: they
// are translated on the child, and those after it do not wait at all.
func TestTwinSilentProbeHoldsNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	dir := t.TempDir()
	b, url := twinBridge(t, "q-1", []string{"sh", "-c", notNativeChild}, map[string]string{"DISCOVER": "silent", "STARTS": filepath.Join(dir, "{child}")})
	b.twin.wait = 500 * time.Millisecond // the init timeout is 10 s
	call := func(what string, within time.Duration) {
		start := time.Now()
		status, m := post2026(t, url, "tools/call", `{"name":"t","arguments":{}}`)
		if took := time.Since(start); status != http.StatusOK || text(m) != "ran" || took > within {
			t.Errorf("%s: %d %v after %v, want it translated within %v", what, status, m, took, within)
		}
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { call("a call beside the probe", 5*time.Second) })
	}
	wg.Wait()
	for range 3 {
		call("a later call", 2*time.Second)
	}
	info, ok := b.StatelessChild()
	if n := lines(t, filepath.Join(dir, "q-1-2026")); !ok || info.Probe != "probing" || n != 1 {
		t.Errorf("twin: %+v, started %d times; want one start, still probing", info, n)
	}
}

// openListen2026 opens a 2026-07-28 subscriptions/listen of id asking for
// tool list changes, and returns its stream's messages, one a line, and
// how to leave it.
func openListen2026(t *testing.T, url, id string) (<-chan map[string]any, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	body := `{"jsonrpc":"2.0","id":` + id + `,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	resp := do2026(t, ctx, url, body)
	ch := make(chan map[string]any, 16)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var m map[string]any
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && json.Unmarshal([]byte(data), &m) == nil {
				ch <- m
			}
		}
	}()
	return ch, cancel
}

// nextMethod returns the method of the next message of ch and its
// subscription id; "" when none comes within a second.
func nextMethod(ch <-chan map[string]any) (string, string) {
	select {
	case m := <-ch:
		p, _ := m["params"].(map[string]any)
		meta, _ := p["_meta"].(map[string]any)
		method, _ := m["method"].(string)
		return method, fmt.Sprint(meta["io.modelcontextprotocol/subscriptionId"])
	case <-time.After(time.Second):
		return "", ""
	}
}

// TestTwinListensNatively: two clients' subscriptions/listen on one
// stateless twin both get its tool list changes, each tagged with its own
// id, and one still gets them after the other left: the twin's server
// keeps one listen per connection, which the bridge shares.
func TestTwinListensNatively(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	_, url := twinBridge(t, "l-1", []string{os.Args[0]}, map[string]string{testServerEnv: "1"})
	a, leaveA := openListen2026(t, url, `"a"`)
	b, leaveB := openListen2026(t, url, "22")
	defer leaveB()
	for name, ch := range map[string]<-chan map[string]any{"a": a, "22": b} {
		if m, id := nextMethod(ch); m != "notifications/subscriptions/acknowledged" || id != name {
			t.Fatalf("listen %s opened with %q for %s", name, m, id)
		}
	}
	post2026(t, url, "tools/call", `{"name":"grow","arguments":{}}`)
	for name, ch := range map[string]<-chan map[string]any{"a": a, "22": b} {
		if m, id := nextMethod(ch); m != "notifications/tools/list_changed" || id != name {
			t.Errorf("listen %s got %q for %q, want the list change for it", name, m, id)
		}
	}
	leaveA()
	post2026(t, url, "tools/call", `{"name":"grow","arguments":{}}`)
	if m, id := nextMethod(b); m != "notifications/tools/list_changed" || id != "22" {
		t.Errorf("after the other left, listen 22 got %q for %q", m, id)
	}
}

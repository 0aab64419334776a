package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/authz"
	"github.com/mcpfleet/mcpfleet/internal/limit"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// ownAnswer is a row of docs/GATEWAY.md's "The gateway's own answers".
type ownAnswer struct {
	condition, status, code, retryAfter string
}

// ownAnswersTable reads that table.
func ownAnswersTable(t *testing.T) []ownAnswer {
	t.Helper()
	b, err := os.ReadFile("../../docs/GATEWAY.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## The gateway's own answers\n")
	if !ok {
		t.Fatal(`docs/GATEWAY.md has no "The gateway's own answers" section`)
	}
	var rows []ownAnswer
	for line := range strings.SplitSeq(section, "\n") {
		if strings.HasPrefix(line, "## ") {
			break
		}
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| condition ") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) != 4 {
			t.Fatalf("row of %d cells: %q", len(cells), line)
		}
		rows = append(rows, ownAnswer{cells[0], cells[1], cells[2], cells[3]})
	}
	if len(rows) < 20 {
		t.Fatalf("the table has %d rows", len(rows))
	}
	return rows
}

// ownAnswersElsewhere are the rows this test does not bring about, each
// with the test that does.
var ownAnswersElsewhere = map[string]string{
	"bearer token missing or not verified (`auth`)":                     "auth_test.go",
	"request body not read within `body_read_timeout`, or cut":          "TestBodyReadTimeout",
	"resume of a stream whose events are no longer kept":                "resume_shared_test.go",
	"`tasks/*` naming a task of another caller":                         "binding_test.go",
	"the limits store does not answer, `limits.on_store_error: closed`": "limits_test.go",
}

// TestOwnAnswersTable walks docs/GATEWAY.md's table of the gateway's own
// answers: each row a gateway test here can bring about is, and its
// answer's status, JSON-RPC code and Retry-After are the row's; every other
// row names the test that covers it, so neither the table nor this test
// can drift from the code unnoticed.
func TestOwnAnswersTable(t *testing.T) {
	produce := ownAnswerProducers(t)
	for _, row := range ownAnswersTable(t) {
		send, ok := produce[row.condition]
		delete(produce, row.condition)
		if !ok {
			if ownAnswersElsewhere[row.condition] == "" {
				t.Errorf("row %q: nothing brings it about here, and no other test is named", row.condition)
			}
			continue
		}
		t.Run(row.condition, func(t *testing.T) { checkOwnAnswer(t, row, send()) })
	}
	for cond := range produce {
		t.Errorf("the table has no row %q", cond)
	}
}

func checkOwnAnswer(t *testing.T, row ownAnswer, resp *http.Response) {
	t.Helper()
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if got := strconv.Itoa(resp.StatusCode); got != row.status {
		t.Errorf("status %s, want %s (%q)", got, row.status, b)
	}
	var v struct {
		JSONRPC string `json:"jsonrpc"`
		Error   struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	isRPC := json.Unmarshal(b, &v) == nil && v.JSONRPC == "2.0"
	switch {
	case strings.HasPrefix(row.code, "—"):
		if isRPC {
			t.Errorf("a JSON-RPC body %q, want none", b)
		}
	case !isRPC:
		t.Errorf("body %q is no JSON-RPC error, want code %s", b, row.code)
	case strconv.Itoa(v.Error.Code) != row.code:
		t.Errorf("code %d, want %s", v.Error.Code, row.code)
	}
	ra := resp.Header.Get("Retry-After")
	switch n, err := strconv.Atoi(ra); {
	case row.retryAfter == "—":
		if ra != "" {
			t.Errorf("Retry-After %q, want none", ra)
		}
	case err != nil || n < 1:
		t.Errorf("Retry-After %q, want whole seconds", ra)
	case isDigits(row.retryAfter) && row.retryAfter != ra:
		t.Errorf("Retry-After %d, want %s", n, row.retryAfter)
	case strings.HasPrefix(row.retryAfter, "`health_check.interval`") && n != 2:
		t.Errorf("Retry-After %d, want 2 (the check interval, 1.5 s, rounded up)", n)
	}
}

// ownAnswerProducers bring about the table's conditions, each through a
// gateway in front of real replicas (or dead ones).
func ownAnswerProducers(t *testing.T) map[string]func() *http.Response {
	live := startFleet(t, 1, &Options{MaxBodyBytes: 1 << 10})
	base := live.front.URL
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`
	modern := map[string]string{"Mcp-Protocol-Version": "2025-11-25"}
	do := func(method, url, body string, hdr map[string]string) func() *http.Response {
		return func() *http.Response { return ownRequest(t, method, url, body, hdr) }
	}
	stateless := func(url, method string, hdr map[string]string) func() *http.Response {
		return func() *http.Response {
			return newRaw(t, url, "2026-07-28").post(context.Background(), 1, method, map[string]any{"name": "whoami", "arguments": map[string]any{}}, hdr)
		}
	}
	produce := map[string]func() *http.Response{
		"request target with a dot-segment, an encoded slash or a backslash":                                       func() *http.Response { return rawTarget(t, base, "/a/../mcp") },
		"`Host` not allowed (`allowed_hosts`, DNS rebinding)":                                                      do("POST", base+"/mcp", call, map[string]string{"Host": "evil.example"}),
		"`Origin` not allowed (`allowed_origins`)":                                                                 do("POST", base+"/mcp", call, map[string]string{"Origin": "https://evil.example"}),
		"HTTP method other than GET, POST and DELETE at the MCP endpoint, or the wrong one at a 2024-11-05 path":   do("PUT", base+"/mcp", call, nil),
		"request body over `max_body_bytes`":                                                                       do("POST", base+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"`+strings.Repeat("x", 2<<10)+`"}}`, nil),
		"body that is not JSON":                                                                                    do("POST", base+"/mcp", `{"jsonrpc":`, nil),
		"JSON that is not a JSON-RPC message":                                                                      do("POST", base+"/mcp", `{"hello":"world"}`, nil),
		"JSON-RPC message, its `params` or their `_meta` naming one member twice (readers differ on which counts)": do("POST", base+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call","params":{"name":"echo"}}`, nil),
		"more than one `Mcp-Session-Id` header": func() *http.Response {
			// Two keys of one map would be set in a random order, and a Set
			// after the Add would leave one header: both go in as Adds.
			return ownRequest(t, "POST", base+"/mcp", call, map[string]string{"Mcp-Session-Id  ": "a", "Mcp-Session-Id ": "b"})
		},
		"`Mcp-Method` or `Mcp-Name` disagrees with the body (SEP-2243)":                                                                 stateless(base+"/mcp", "tools/call", map[string]string{"Mcp-Name": "echo"}),
		"JSON-RPC batch where the protocol version forbids it, with `initialize` in it, or over `max_batch`":                            do("POST", base+"/mcp", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, modern),
		"session ID unknown, ended, tampered with, another caller's or too old; its replica gone, quarantined, unreachable or draining": do("POST", base+"/mcp", call, map[string]string{"Mcp-Session-Id": "not-a-sealed-id", "Mcp-Protocol-Version": "2025-11-25"}),
		"2024-11-05 message without `sessionId`, or with other query parameters":                                                        do("POST", base+"/messages?x=1", call, nil),
		"2024-11-05 message for an endpoint that does not open, or whose replica is gone":                                               do("POST", base+"/messages?sessionId=not-sealed", call, nil),
		"OAuth discovery document asked with a method other than GET or HEAD":                                                           do("POST", base+"/.well-known/oauth-protected-resource", "", nil),
		"a path that is neither the MCP endpoint, a 2024-11-05 path nor a passthrough path":                                             do("GET", base+"/nowhere", "", nil),
	}
	produce["resume whose `Last-Event-ID` names no event of the session"] = func() *http.Response {
		r := newRaw(t, base+"/mcp", "2025-11-25")
		r.initialize()
		return ownRequest(t, "GET", base+"/mcp", "", map[string]string{"Mcp-Session-Id": r.session, "Mcp-Protocol-Version": "2025-11-25", "Last-Event-ID": "not-an-event"})
	}
	produce["a new 2024-11-05 stream once the gateway's shutdown has begun"] = func() *http.Response {
		closing := startFleet(t, 1, nil)
		closing.gw.EndStandaloneStreams()
		return ownRequest(t, "GET", closing.front.URL+"/sse", "", nil)
	}
	addFailures(t, produce)
	addRefusals(t, produce)
	return produce
}

// addFailures adds the conditions of replicas that do not take a request,
// each with a gateway of its own.
func addFailures(t *testing.T, produce map[string]func() *http.Response) {
	dead := startGatewayOn(t, []upstream.Spec{{Name: "a", URL: refusedURL(t)}, {Name: "b", URL: refusedURL(t)}}, &Options{HealthCheckInterval: 1500 * time.Millisecond}, io.Discard)
	checkOnce(t, dead)
	unchecked := startGatewayOn(t, []upstream.Spec{{Name: "a", URL: refusedURL(t)}}, nil, io.Discard)
	dropper := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
	}))
	t.Cleanup(dropper.Close)
	dropping := startGatewayOn(t, []upstream.Spec{{Name: "dropper", URL: dropper.URL + "/mcp"}}, nil, io.Discard)
	call := func(gw *Gateway, tool string) func() *http.Response {
		f := newFront(gw)
		t.Cleanup(f.Close)
		return func() *http.Response {
			return newRaw(t, f.URL+"/mcp", "2026-07-28").post(context.Background(), 1, "tools/call", map[string]any{"name": tool, "arguments": map[string]any{"key": "k"}}, nil)
		}
	}
	produce["no replica can take new work (every one down, draining, held or quarantined), and the one tried anyway did not take it"] = call(dead, "whoami")
	produce["replicas that could take new work, but none could be reached"] = call(unchecked, "whoami")
	produce["the replica failed after the request was delivered (not retried)"] = call(dropping, "mutate")
}

// addRefusals adds the conditions of limits, capacity and the memory
// budget, each with a gateway of its own.
func addRefusals(t *testing.T, produce map[string]func() *http.Response) {
	lim := limit.NewLimiter(limit.NewMemory(0), &limit.Options{Rate: 0.001, Burst: 1})
	t.Cleanup(lim.Close)
	limited := startFleet(t, 1, &Options{Limits: lim})
	capLim := limit.NewLimiter(limit.NewMemory(0), nil)
	t.Cleanup(capLim.Close)
	capped := startFleet(t, 1, &Options{Capacity: capLim, DefaultMaxInflight: 1})
	full := startFleet(t, 1, &Options{MemoryLimit: 100, MemoryUsed: func() uint64 { return 1000 }})
	rules, err := authz.Compile([]authz.Rule{{Name: "no-whoami", Match: `mcp.tool == "whoami"`, Effect: authz.Deny}}, authz.Allow)
	if err != nil {
		t.Fatal(err)
	}
	denying := startFleet(t, 1, &Options{Authz: rules})
	call := func(url, tool string, args map[string]any) *http.Response {
		return newRaw(t, url, "2026-07-28").post(context.Background(), 1, "tools/call", map[string]any{"name": tool, "arguments": args}, nil)
	}
	produce["an authorization rule (`authz.rules`, or `authz.default: deny`) denies the request"] = func() *http.Response {
		return call(denying.url(), "whoami", map[string]any{})
	}
	produce["a rate, concurrency or tool limit refuses the call"] = func() *http.Response {
		call(limited.url(), "whoami", map[string]any{}).Body.Close() // the burst
		return call(limited.url(), "whoami", map[string]any{})
	}
	produce["every replica the request may go to is at `max_inflight` (after `queue_timeout`)"] = func() *http.Response {
		running := make(chan *http.Response, 1)
		go func() { running <- call(capped.url(), "sleep", map[string]any{"seconds": 1}) }()
		t.Cleanup(func() { (<-running).Body.Close() })
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if n, _ := capped.servers[0].Load(); n > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the sleep call never reached its replica")
			}
		}
		return call(capped.url(), "whoami", map[string]any{})
	}
	produce["the gateway is at its memory budget (a new stream or session)"] = func() *http.Response {
		for deadline := time.Now().Add(5 * time.Second); full.gw.mem.Level() < MemoryRefuseNew; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the memory budget never refused")
			}
		}
		return call(full.url(), "whoami", map[string]any{})
	}
}

// ownRequest sends one request; hdr's "Host" sets the Host, and a key with
// a trailing space adds a second value of the header it names.
func ownRequest(t *testing.T, method, url, body string, hdr map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		switch {
		case k == "Host":
			req.Host = v
		case strings.HasSuffix(k, " "):
			req.Header.Add(strings.TrimSpace(k), v)
		default:
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// rawTarget sends a GET of target exactly as written, which net/http's
// client would clean.
func rawTarget(t *testing.T, base, target string) *http.Response {
	t.Helper()
	host := strings.TrimPrefix(base, "http://")
	c, err := net.DialTimeout("tcp", host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, "GET "+target+" HTTP/1.1\r\nHost: "+host+"\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func isDigits(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

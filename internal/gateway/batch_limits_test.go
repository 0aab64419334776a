package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	josejwt "github.com/go-jose/go-jose/v4/jwt"

	"github.com/mcpfleet/mcpfleet/internal/identity"
	"github.com/mcpfleet/mcpfleet/internal/limit"
	"github.com/mcpfleet/mcpfleet/internal/store/redistest"
)

// initializeAt opens a legacy session by hand at protocol version v; the
// requests after it carry r.version (none for 2025-03-26, which has no
// MCP-Protocol-Version header).
func initializeAt(t *testing.T, r *raw, v string) {
	t.Helper()
	resp := r.post(context.Background(), 1, "initialize", map[string]any{
		"protocolVersion": v, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "raw", "version": "1"},
	}, nil)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	r.session = resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || r.session == "" {
		t.Fatalf("initialize at %s: status %d, session %q", v, resp.StatusCode, r.session)
	}
	resp = r.post(context.Background(), 0, "notifications/initialized", nil, nil)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// rpc is one JSON-RPC request of a batch.
func rpc(id int, method string, params map[string]any) map[string]any {
	if params == nil {
		params = map[string]any{}
	}
	return map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}
}

// mutateCall is a tools/call of the testserver's mutate tool.
func mutateCall(id int) map[string]any {
	return rpc(id, "tools/call", map[string]any{"name": "mutate", "arguments": map[string]any{"key": "k"}})
}

// postBatch posts msgs as one JSON-RPC batch in r's session and reads the
// answer whole.
func postBatch(t *testing.T, r *raw, msgs []map[string]any) (int, string) {
	t.Helper()
	body, _ := json.Marshal(msgs)
	req, _ := http.NewRequest(http.MethodPost, r.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if r.version != "" {
		req.Header.Set("Mcp-Protocol-Version", r.version)
	}
	if r.session != "" {
		req.Header.Set("Mcp-Session-Id", r.session)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		t.Fatalf("posting a batch: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// rpcCode returns the code of a single JSON-RPC error answer, 0 if none.
func rpcCode(body string) int {
	var v struct {
		Error struct{ Code int } `json:"error"`
	}
	_ = json.Unmarshal([]byte(body), &v)
	return v.Error.Code
}

// pings returns n ping requests.
func pings(n int) []map[string]any {
	var msgs []map[string]any
	for i := range n {
		msgs = append(msgs, rpc(100+i, "ping", nil))
	}
	return msgs
}

// TestBatchRefusedFrom20250618: a batch in a 2025-11-25 session, in a
// 2026-07-28 request, or holding initialize is refused 400 -32600 and
// never reaches a replica.
func TestBatchRefusedFrom20250618(t *testing.T) {
	f := startLimited(t, limit.NewLimiter(limit.NewMemory(0), nil))
	url := f.fronts[0].URL + "/mcp"
	session := newRaw(t, url, "2025-11-25")
	initializeAt(t, session, "2025-11-25")
	stateless := newRaw(t, url, "2026-07-28")
	old := newRaw(t, url, "")
	batch := append(pings(1), mutateCall(2))
	init := []map[string]any{rpc(1, "initialize", map[string]any{"protocolVersion": "2025-03-26"}), rpc(2, "ping", nil)}
	meta := []map[string]any{rpc(1, "ping", map[string]any{"_meta": map[string]any{"io.modelcontextprotocol/protocolVersion": "2025-06-18"}})}
	for name, c := range map[string]struct {
		r    *raw
		msgs []map[string]any
	}{
		"2025-11-25 session":      {session, batch},
		"2026-07-28 request":      {stateless, batch},
		"initialize in a batch":   {old, init},
		"a 2025-06-18 _meta":      {old, meta},
		"17 messages, 2025-03-26": {old, pings(17)},
		"ping + 20 mutate":        {old, append(pings(1), mutates20()...)},
	} {
		status, body := postBatch(t, c.r, c.msgs)
		if status != http.StatusBadRequest || rpcCode(body) != -32600 {
			t.Errorf("%s: %d %s, want 400 with -32600", name, status, body)
		}
	}
	if n := f.calls.Method("ping") + f.calls.Started("mutate") + f.calls.Method("initialize"); n != 1 {
		t.Errorf("replicas handled %d requests, want only the session's initialize", n)
	}
}

// mutates20 returns 20 mutate calls.
func mutates20() []map[string]any {
	var msgs []map[string]any
	for i := range 20 {
		msgs = append(msgs, mutateCall(i+1))
	}
	return msgs
}

// TestBatchAdmittedWhole: in a 2025-03-26 session each request of a batch
// takes its own token; a batch the bucket cannot take whole is refused
// whole, in SEP-3304's shape, and runs nothing.
func TestBatchAdmittedWhole(t *testing.T) {
	// max_batch 32, so that the limits decide a batch of 21.
	f := startLimitedWith(t, Options{MaxBatch: 32}, limit.NewLimiter(limit.NewMemory(0), &limit.Options{Rate: 1, Burst: 2}))
	r := newRaw(t, f.fronts[0].URL+"/mcp", "")
	initializeAt(t, r, "2025-03-26")
	status, body := postBatch(t, r, append(pings(1), mutates20()...))
	if status != http.StatusTooManyRequests || rpcCode(body) != -32023 || !strings.Contains(body, `"retryAfterMs":`) {
		t.Fatalf("ping + 20 mutate with a burst of 2: %d %s, want 429 -32023 with retryAfterMs", status, body)
	}
	if n := f.calls.Started("mutate"); n != 0 {
		t.Fatalf("a refused batch ran %d mutations", n)
	}
	// Two calls fit the burst: the batch runs, and both answers come back.
	status, body = postBatch(t, r, append(pings(1), mutateCall(1), mutateCall(2)))
	if status != http.StatusOK || strings.Count(body, `"result"`) != 3 {
		t.Fatalf("ping + 2 mutate: %d %s, want 200 with three results", status, body)
	}
	if n := f.calls.Started("mutate"); n != 2 {
		t.Fatalf("%d mutations ran, want 2", n)
	}
	// The bucket is empty now: one more call is refused.
	if status, body = postBatch(t, r, []map[string]any{mutateCall(3)}); status != http.StatusTooManyRequests {
		t.Fatalf("a call past the burst: %d %s, want 429", status, body)
	}
	if n := f.calls.Started("mutate"); n > 2 {
		t.Fatalf("%d mutations ran with a burst of 2", n)
	}
}

// TestBatchToolCap: each tools/call of a batch takes a place under its
// tool's cap, so six capped calls in one batch never run more than the cap
// at once: refused whole while they do not fit, and while another batch
// holds the place.
func TestBatchToolCap(t *testing.T) {
	f := startLimited(t, limit.NewLimiter(limit.NewMemory(0), &limit.Options{Tools: map[string]int{"sleep": 1}}))
	r := newRaw(t, f.fronts[0].URL+"/mcp", "")
	initializeAt(t, r, "2025-03-26")
	sleep := func(id int) map[string]any {
		return rpc(id, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"seconds": 0.5}})
	}
	var six []map[string]any
	for i := range 6 {
		six = append(six, sleep(i+1))
	}
	if status, body := postBatch(t, r, six); status != http.StatusTooManyRequests || rpcCode(body) != -32023 {
		t.Fatalf("six calls of a tool capped at 1: %d %s, want 429 -32023", status, body)
	}
	var wg sync.WaitGroup
	statuses := make([]int, 6)
	for i := range 6 {
		wg.Go(func() { statuses[i], _ = postBatch(t, r, []map[string]any{sleep(i + 1)}) })
	}
	wg.Wait()
	ok := 0
	for _, s := range statuses {
		if s == http.StatusOK {
			ok++
		}
	}
	if p := f.calls.Peak("sleep"); p != 1 || ok == 0 {
		t.Fatalf("peak of the capped tool %d with %d batches admitted, want 1 and at least 1", p, ok)
	}
}

// TestMessagesPathAdmitted: a 2024-11-05 message is admitted as a POST on
// the MCP endpoint is: 8 calls with rate 1, burst 1, one admitted.
func TestMessagesPathAdmitted(t *testing.T) {
	reps, specs := startSSEReplicas(t, 1)
	l := limit.NewLimiter(limit.NewMemory(0), &limit.Options{Rate: 1, Burst: 1})
	t.Cleanup(l.Close)
	opts := sharedSecretOptions(t)
	opts.Limits = l
	_, fronts, _ := startGateways(t, 1, specs, opts)
	_, endpoint, _ := sseOpen(t, fronts[0].URL)
	admitted, refused := 0, 0
	for i := range 8 {
		status, body := ssePost(t, fronts[0].URL, endpoint, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"whoami"}}`, i+1))
		switch {
		case status == http.StatusAccepted:
			admitted++
		case status == http.StatusTooManyRequests && rpcCode(body) == -32023:
			refused++
		default:
			t.Fatalf("message %d: %d %s", i, status, body)
		}
	}
	if admitted != 1 || refused != 7 {
		t.Fatalf("%d admitted, %d refused, want 1 and 7", admitted, refused)
	}
	if n := reps[0].posts.Load(); n != 1 {
		t.Fatalf("the replica got %d messages, want 1", n)
	}
}

// TestListenAdmittedBeforeFanout: a subscriptions/listen takes the
// caller's concurrency, listed in limits.methods or not, and a refused one
// reaches no replica.
func TestListenAdmittedBeforeFanout(t *testing.T) {
	for name, methods := range map[string][]string{
		"in limits.methods": {"tools/call", "subscriptions/listen"},
		"not listed":        nil,
	} {
		t.Run(name, func(t *testing.T) {
			f := startLimited(t, limit.NewLimiter(limit.NewMemory(0), &limit.Options{Concurrency: 1, Methods: methods}))
			r := newRaw(t, f.fronts[0].URL+"/mcp", "2026-07-28")
			tok := map[string]string{"Authorization": "Bearer alice"}
			listen := map[string]any{"notifications": map[string]any{"toolsListChanged": true}}
			first := r.post(context.Background(), 1, "subscriptions/listen", listen, tok)
			defer first.Body.Close()
			if first.StatusCode != http.StatusOK {
				t.Fatalf("first listen: %d", first.StatusCode)
			}
			// The answer's head may go out before every leg has opened.
			legs := inFlightOf(f.gws[0])
			for deadline := time.Now().Add(5 * time.Second); legs != 3 && time.Now().Before(deadline); legs = inFlightOf(f.gws[0]) {
				time.Sleep(5 * time.Millisecond)
			}
			if legs != 3 {
				t.Fatalf("first listen open on %d replicas, want 3", legs)
			}
			for i := range 4 {
				resp := r.post(context.Background(), 2+i, "subscriptions/listen", listen, tok)
				code, _ := rpcError(t, resp)
				if resp.StatusCode != http.StatusTooManyRequests || code != -32023 {
					t.Fatalf("listen %d: %d %d, want 429 -32023", i+2, resp.StatusCode, code)
				}
			}
			if got := inFlightOf(f.gws[0]); got != legs {
				t.Fatalf("%d legs open after four refused listens, want %d", got, legs)
			}
		})
	}
}

// inFlightOf sums a gateway's fleet's in-flight counts.
func inFlightOf(gw *Gateway) int64 {
	s := gw.fleet.Snapshot()
	var n int64
	for i := range s.Len() {
		n += s.InFlight(i)
	}
	return n
}

// TestSessionsLimited: 50 initialize from one caller with limits.sessions
// 10 open 10 sessions.
func TestSessionsLimited(t *testing.T) {
	f := startLimited(t, limit.NewLimiter(limit.NewMemory(0), &limit.Options{Sessions: 10}))
	r := newRaw(t, f.fronts[0].URL+"/mcp", "2025-11-25")
	tok := map[string]string{"Authorization": "Bearer alice"}
	admitted := 0
	for i := range 50 {
		resp := r.post(context.Background(), i+1, "initialize", map[string]any{
			"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
			"clientInfo": map[string]any{"name": "raw", "version": "1"},
		}, tok)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			admitted++
		case http.StatusTooManyRequests:
		default:
			t.Fatalf("initialize %d: %d", i, resp.StatusCode)
		}
	}
	if admitted != 10 || f.calls.Method("initialize") != 10 {
		t.Fatalf("%d of 50 sessions admitted, %d reached a replica; want 10 and 10", admitted, f.calls.Method("initialize"))
	}
	// Another caller has its own sessions.
	resp := r.post(context.Background(), 99, "initialize", map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "raw", "version": "1"},
	}, map[string]string{"Authorization": "Bearer bob"})
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("another caller's initialize: %d", resp.StatusCode)
	}
}

// TestPerAddressLimit: made-up tokens from one address, each a fresh
// caller with a fresh bucket, share the address's bucket: about one call
// a second with limits.per_address 1, where each token alone would pass.
func TestPerAddressLimit(t *testing.T) {
	run := func(perAddress float64, rounds int) (admitted int, took time.Duration) {
		f := startLimited(t, limit.NewLimiter(limit.NewMemory(0), &limit.Options{Rate: 1, Burst: 1, PerAddress: perAddress}))
		r := newRaw(t, f.fronts[0].URL+"/mcp", "2026-07-28")
		start := time.Now()
		for round := range rounds {
			if round > 0 {
				time.Sleep(time.Second)
			}
			for i := range 8 {
				tok := map[string]string{"Authorization": fmt.Sprintf("Bearer made-up-%d-%d", round, i)}
				got := callTool(t, r, i+1, "echo", map[string]any{"text": "x"}, tok)
				switch got.status {
				case http.StatusOK:
					admitted++
				case http.StatusTooManyRequests:
					if !strings.Contains(got.body, "address limit") {
						t.Fatalf("refused by another limit than the address's: %s", got.body)
					}
				default:
					t.Fatalf("call: %d %s", got.status, got.body)
				}
			}
		}
		return admitted, time.Since(start)
	}
	if got, _ := run(0, 1); got != 8 {
		t.Fatalf("without limits.per_address, 8 made-up tokens: %d admitted, want 8", got)
	}
	got, took := run(1, 3)
	// A burst of 1 and a token a second: at most one more than the whole
	// seconds the run took, and at least one each round.
	if limit := 1 + int(took.Seconds()); got > limit || got < 3 {
		t.Fatalf("24 calls from one address in %v at 1 a second: %d admitted, want 3 to %d", took, got, limit)
	}
}

// TestPerAddressSparesVerifiedCallers: a caller whose token the gateway
// verified is limited as itself alone: eight of them from one address all
// pass limits.per_address 1.
func TestPerAddressSparesVerifiedCallers(t *testing.T) {
	idp := newIssuer(t, "k1")
	v, err := identity.NewVerifier(identity.VerifyOptions{Issuers: []string{"https://idp"}, Audiences: []string{"mcp"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.SetKeys(idp.jwks); err != nil {
		t.Fatal(err)
	}
	f := startLimitedWith(t, Options{Auth: v}, limit.NewLimiter(limit.NewMemory(0), &limit.Options{Rate: 1, Burst: 1, PerAddress: 1}))
	r := newRaw(t, f.fronts[0].URL+"/mcp", "2026-07-28")
	now := time.Now()
	for i := range 8 {
		tok := idp.token(t, josejwt.Claims{Issuer: "https://idp", Subject: fmt.Sprintf("user-%d", i), Audience: josejwt.Audience{"mcp"},
			Expiry: josejwt.NewNumericDate(now.Add(time.Hour)), IssuedAt: josejwt.NewNumericDate(now)})
		if got := callTool(t, r, i+1, "echo", map[string]any{"text": "x"}, map[string]string{"Authorization": "Bearer " + tok}); got.status != http.StatusOK {
			t.Fatalf("verified caller %d: %d %s, want 200", i, got.status, got.body)
		}
	}
}

// TestBatchAdmittedAcrossGateways: two gateways sharing a real
// redis-server spend one bucket for a caller's batches (the caller is its
// address, the same through both): a batch of two with
// three tokens passes one gateway, the next batch of two is refused by the
// other, and a single call still fits.
func TestBatchAdmittedAcrossGateways(t *testing.T) {
	f := startLimited(t, redisLimiters(t, redistest.Start(t), 2, limit.Options{Rate: 0.01, Burst: 3})...)
	var sessions []*raw
	for _, front := range f.fronts {
		r := newRaw(t, front.URL+"/mcp", "")
		initializeAt(t, r, "2025-03-26")
		sessions = append(sessions, r)
	}
	post := func(front int, msgs []map[string]any) int {
		r := sessions[front]
		body, _ := json.Marshal(msgs)
		req, _ := http.NewRequest(http.MethodPost, r.url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", r.session)
		resp, err := r.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := post(0, []map[string]any{mutateCall(1), mutateCall(2)}); s != http.StatusOK {
		t.Fatalf("first batch of two: %d, want 200", s)
	}
	if s := post(1, []map[string]any{mutateCall(3), mutateCall(4)}); s != http.StatusTooManyRequests {
		t.Fatalf("second batch of two, through the other gateway: %d, want 429", s)
	}
	if s := post(1, []map[string]any{mutateCall(5)}); s != http.StatusOK {
		t.Fatalf("the last token: %d, want 200", s)
	}
	if n := f.calls.Started("mutate"); n != 3 {
		t.Fatalf("%d mutations ran, want 3", n)
	}
}

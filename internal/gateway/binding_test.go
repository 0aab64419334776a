package gateway

import (
	"bufio"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	josejwt "github.com/go-jose/go-jose/v4/jwt"
	"github.com/mcpfleet/mcpfleet/internal/balance"
	"github.com/mcpfleet/mcpfleet/internal/identity"
	"github.com/mcpfleet/mcpfleet/internal/session"
	"github.com/mcpfleet/mcpfleet/internal/testserver"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// bindFleet is a gateway in front of testserver replicas that count the
// JSON-RPC methods they handle.
type bindFleet struct {
	gw    *Gateway
	url   string
	calls *testserver.Gauge
	logs  *syncBuffer
}

func startBindFleet(t *testing.T, opts *Options) *bindFleet {
	t.Helper()
	f := &bindFleet{calls: &testserver.Gauge{}, logs: &syncBuffer{}}
	var specs []upstream.Spec
	for _, name := range []string{"a", "b"} {
		s, err := testserver.New(name, &testserver.Options{Calls: f.calls})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(s.Handler())
		t.Cleanup(hs.Close)
		specs = append(specs, upstream.Spec{Name: name, URL: hs.URL + "/mcp"})
	}
	if opts.Keyring == nil {
		opts.Keyring, opts.RoutingSalt = sharedSecretOptions(t).Keyring, []byte("shared-salt-0123456789")
	}
	opts.Balance = balance.RoundRobin
	f.gw = startGatewayOn(t, specs, opts, f.logs)
	front := newFront(f.gw)
	t.Cleanup(front.Close)
	f.url = front.URL + "/mcp"
	return f
}

// openAs opens a 2025-11-25 session with the credential authz ("" for
// none) and returns the sealed session ID.
func openAs(t *testing.T, url, authz string) string {
	t.Helper()
	r := newRaw(t, url, "2025-11-25")
	resp := r.post(context.Background(), 1, "initialize", map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "raw", "version": "1"},
	}, authHeader(authz))
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize: status %d, session %q", resp.StatusCode, sid)
	}
	return sid
}

func authHeader(authz string) map[string]string {
	if authz == "" {
		return nil
	}
	return map[string]string{"Authorization": authz}
}

// use sends one request of a session: a POST of tools/call mutate (key
// names the caller), a GET (with lastEvent as its Last-Event-ID when not
// empty) or a DELETE. It returns the status and the body, read to its end
// for all but a GET stream that opened.
func use(t *testing.T, url, method, sid, authz, key, lastEvent string) (int, string) {
	t.Helper()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"mutate","arguments":{"key":"` + key + `","seconds":0,"at":0}}}`)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, url, body)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Mcp-Session-Id", sid)
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	if lastEvent != "" {
		req.Header.Set("Last-Event-ID", lastEvent)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	if method == http.MethodGet && resp.StatusCode == 200 {
		return resp.StatusCode, ""
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// firstEventID returns the first sealed event ID of a POST's SSE answer.
func firstEventID(t *testing.T, url, sid, authz string) string {
	t.Helper()
	status, body := use(t, url, http.MethodPost, sid, authz, "alice-events", "")
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		if id, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
			return id
		}
	}
	t.Fatalf("no event id in the answer (%d): %s", status, body)
	return ""
}

// unknownSession is the answer to a request (method, Last-Event-ID) on a
// session that does not exist.
func unknownSession(t *testing.T, f *bindFleet, method, authz, lastEvent string) string {
	t.Helper()
	status, body := use(t, f.url, method, "garbage-id", authz, "nobody", lastEvent)
	if status != 404 {
		t.Fatalf("an unknown session: %d %s", status, body)
	}
	return body
}

// TestBindingRefusesAnotherVerifiedCaller is the session hijack with JWT
// verification on: Bob's valid token on Alice's session gets, for a POST,
// a GET, a resume by Last-Event-ID and a DELETE, the answer of a session
// that does not exist; nothing of his reaches a replica, her session
// lives on, each refusal is counted and logged with digests only, and
// Alice's refreshed token (same iss and sub, new jti and exp) keeps it.
func TestBindingRefusesAnotherVerifiedCaller(t *testing.T) {
	idp := newIssuer(t, "k1")
	v, err := identity.NewVerifier(identity.VerifyOptions{Issuers: []string{"https://idp"}, Audiences: []string{"mcp"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.SetKeys(idp.jwks); err != nil {
		t.Fatal(err)
	}
	f := startBindFleet(t, &Options{Auth: v})
	now := time.Now()
	token := func(sub string, life time.Duration) string {
		now = now.Add(time.Second)
		return "Bearer " + idp.token(t, josejwt.Claims{Issuer: "https://idp", Subject: sub, Audience: josejwt.Audience{"mcp"},
			Expiry: josejwt.NewNumericDate(now.Add(life)), IssuedAt: josejwt.NewNumericDate(now), ID: fmt.Sprint("jti-", now.UnixNano())})
	}
	alice, bob := token("alice", time.Hour), token("bob", time.Hour)
	sid := openAs(t, f.url, alice)
	event := firstEventID(t, f.url, sid, alice)

	for _, tt := range []struct{ method, lastEvent string }{
		{http.MethodPost, ""}, {http.MethodGet, ""}, {http.MethodGet, event}, {http.MethodDelete, ""},
	} {
		unknown := unknownSession(t, f, tt.method, bob, tt.lastEvent)
		status, body := use(t, f.url, tt.method, sid, bob, "bob", tt.lastEvent)
		if status != 404 || body != unknown {
			t.Errorf("bob's %s (resume %v): %d %s; want the unknown session's 404 %s", tt.method, tt.lastEvent != "", status, body, unknown)
		}
	}
	if n := f.calls.Method("tools/call"); n != 1 {
		t.Errorf("%d calls reached the replicas, want alice's one", n)
	}
	if n := testutil.ToFloat64(f.gw.metrics.bindingRefused.WithLabelValues("session")); n != 4 {
		t.Errorf("mcpfleet_session_binding_refused_total{kind=session} = %v, want 4", n)
	}
	logs := f.logs.String()
	if !strings.Contains(logs, `"caller":"`) || !strings.Contains(logs, `"opener":"`) {
		t.Errorf("no refusal logged with the digests: %s", logs)
	}
	for _, secret := range []string{bob[7:], alice[7:], sid} {
		if strings.Contains(logs, secret) {
			t.Fatal("a token or session ID reached the log")
		}
	}
	// Alice's token refreshed: a new jti and exp, the same iss and sub.
	refreshed := token("alice", 2*time.Hour)
	if status, body := use(t, f.url, http.MethodPost, sid, refreshed, "alice", ""); status != 200 || !strings.Contains(body, "mutated alice") {
		t.Fatalf("alice's refreshed token on her session: %d %s", status, body)
	}
	// Her resume passes the session's check: the stream ended with its
	// client there, so it is gone (410), not unknown (404).
	if status, body := use(t, f.url, http.MethodGet, sid, refreshed, "", event); status == 404 {
		t.Errorf("alice's resume: %d %s", status, body)
	}
}

// TestBindingOpaqueTokens: without verification, a session opened with
// token X is unknown to token Y and to a caller without a credential,
// and known to X however it is spelled (normalised); a session opened
// without a credential is bound to its ID alone.
func TestBindingOpaqueTokens(t *testing.T) {
	f := startBindFleet(t, &Options{})
	sid := openAs(t, f.url, "Bearer token-x")
	unknown := unknownSession(t, f, http.MethodPost, "Bearer token-y", "")
	for _, authz := range []string{"Bearer token-y", "", "Basic token-x", "Bearer token-x2"} {
		if status, body := use(t, f.url, http.MethodPost, sid, authz, "other", ""); status != 404 || body != unknown {
			t.Errorf("%q on X's session: %d %s", authz, status, body)
		}
	}
	if n := f.calls.Method("tools/call"); n != 0 {
		t.Errorf("%d refused calls reached a replica", n)
	}
	if status, body := use(t, f.url, http.MethodPost, sid, "bearer   token-x ", "x", ""); status != 200 || !strings.Contains(body, "mutated x") {
		t.Errorf("X spelled otherwise: %d %s", status, body)
	}
	anon := openAs(t, f.url, "")
	if status, body := use(t, f.url, http.MethodPost, anon, "Bearer token-y", "y", ""); status != 200 {
		t.Errorf("a session opened without a credential, used with one: %d %s", status, body)
	}
}

// TestBindingNone: session_binding none restores the behaviour before
// binding: any holder of the ID uses the session, also one that a gateway
// with binding on sealed for its opener.
func TestBindingNone(t *testing.T) {
	bound := startBindFleet(t, &Options{})
	sid := openAs(t, bound.url, "Bearer token-x")
	open := startBindFleet(t, &Options{NoSessionBinding: true})
	sidNone := openAs(t, open.url, "Bearer token-x")
	if tok, _ := open.gw.keys.Open(sidNone); tok.Opener.Bound() {
		t.Error("binding off sealed an opener")
	}
	if status, body := use(t, open.url, http.MethodPost, sidNone, "Bearer token-y", "y", ""); status != 200 {
		t.Errorf("another token, binding off: %d %s", status, body)
	}
	// A session a binding gateway sealed for token X, routed by one with
	// binding off (the same secret) for a caller without a credential:
	// nothing is compared.
	c, _ := open.gw.keys.Open(sid)
	if err := c.Check(session.Opener{}, time.Now(), 0); err == nil {
		t.Fatal("the bound session admits a caller without a credential")
	}
	if _, ok := open.gw.route(context.Background(), &request{sessionID: sid}); ok != nil {
		t.Errorf("binding off refused a bound session: %v", ok)
	}
}

// TestSessionMaxAge: a sealed ID older than session_max_age gets 404
// -32001 and reaches no replica; the same session under a fresh ID is
// served, and a negative age turns the check off.
func TestSessionMaxAge(t *testing.T) {
	f := startBindFleet(t, &Options{SessionMaxAge: time.Hour})
	sid := openAs(t, f.url, "Bearer token-x")
	c, err := f.gw.keys.Open(sid)
	if err != nil {
		t.Fatal(err)
	}
	c.Issued = time.Now().Add(-time.Hour - time.Minute)
	old, _ := f.gw.keys.Seal(c, rand.Reader)
	status, body := use(t, f.url, http.MethodPost, old, "Bearer token-x", "x", "")
	if code := jsonCode(body); status != 404 || code != -32001 {
		t.Errorf("an ID past its age: %d %s", status, body)
	}
	if n := f.calls.Method("tools/call"); n != 0 {
		t.Errorf("%d calls of an expired session reached a replica", n)
	}
	if n := testutil.ToFloat64(f.gw.metrics.sessionMisses.WithLabelValues("expired")); n != 1 {
		t.Errorf("session misses expired = %v", n)
	}
	if status, _ := use(t, f.url, http.MethodPost, sid, "Bearer token-x", "x", ""); status != 200 {
		t.Errorf("the same session under its fresh ID: %d", status)
	}
	off := startBindFleet(t, &Options{SessionMaxAge: -1})
	if _, err := off.gw.route(context.Background(), &request{sessionID: old, caller: c.Opener}); err == errSessionNotFound {
		t.Error("a negative session_max_age still ends IDs by age")
	}
}

// jsonCode returns the JSON-RPC error code of an answer, 0 without one.
func jsonCode(body string) int {
	var code int
	if i := strings.Index(body, `"code":`); i >= 0 {
		fmt.Sscanf(body[i+len(`"code":`):], "%d", &code)
	}
	return code
}

// TestBindingSSEMessages: a 2024-11-05 stream's endpoint is bound to the
// caller that opened the stream: another token's POST to it gets the lost
// session's answer and reaches no replica; the opener's is accepted.
func TestBindingSSEMessages(t *testing.T) {
	reps, specs := startSSEReplicas(t, 1)
	gws, fronts, _ := startGateways(t, 1, specs, sharedSecretOptions(t))
	base := fronts[0].URL
	_, endpoint, _ := sseOpenAs(t, base, "Bearer token-x")
	const call = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"whoami"}}`
	_, lost := ssePostAs(t, base, "/messages?sessionId=garbage", call, "Bearer token-y")
	for _, authz := range []string{"Bearer token-y", ""} {
		if status, body := ssePostAs(t, base, endpoint, call, authz); status != 404 || body != lost {
			t.Errorf("%q on X's endpoint: %d %s; want %s", authz, status, body, lost)
		}
	}
	if n := reps[0].posts.Load(); n != 0 {
		t.Errorf("%d refused messages reached the replica", n)
	}
	if n := testutil.ToFloat64(gws[0].metrics.bindingRefused.WithLabelValues("endpoint")); n != 2 {
		t.Errorf("refusals counted: %v, want 2", n)
	}
	if status, body := ssePostAs(t, base, endpoint, call, "Bearer token-x"); status != http.StatusAccepted {
		t.Errorf("the opener's message: %d %s", status, body)
	}
}

// countingTasks counts the tasks/* requests that reach a task replica.
type countingTasks struct {
	http.Handler
	polls atomic.Int64
}

func (c *countingTasks) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.Header.Get("Mcp-Method"), "tasks/") {
		c.polls.Add(1)
	}
	c.Handler.ServeHTTP(w, r)
}

// TestBindingTasks: a 2026-07-28 task created with token X is, to token
// Y and to a caller without a credential, an unknown task (-32602, as a
// replica answers one), for tasks/get and tasks/cancel alike, and no
// replica sees those requests; X polls it; with binding off, they all
// reach the replica (which alone knows what tasks/cancel is).
func TestBindingTasks(t *testing.T) {
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("binding off=%v", off), func(t *testing.T) {
			rep := &countingTasks{Handler: &taskReplica{name: "a", tasks: map[string]bool{}}}
			hs := httptest.NewServer(rep)
			t.Cleanup(hs.Close)
			gw := startGatewayOn(t, []upstream.Spec{{Name: "a", URL: hs.URL + "/mcp"}}, &Options{NoSessionBinding: off}, io.Discard)
			front := httptest.NewServer(gw)
			t.Cleanup(front.Close)
			r := newRaw(t, front.URL+"/mcp", "2026-07-28")
			resp := r.post(context.Background(), 1, "tools/call", map[string]any{"name": "long", "arguments": map[string]any{}}, authHeader("Bearer token-x"))
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			taskID, _, _ := strings.Cut(strings.SplitN(string(b), `"taskId":"`, 2)[1], `"`)
			poll := func(method, authz string) string {
				hdr := map[string]string{"Mcp-Name": taskID}
				if authz != "" {
					hdr["Authorization"] = authz
				}
				resp := r.post(context.Background(), 2, method, map[string]any{"taskId": taskID}, hdr)
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				return string(b)
			}
			for _, method := range []string{"tasks/get", "tasks/cancel"} {
				for _, authz := range []string{"Bearer token-y", ""} {
					got := poll(method, authz)
					refused := jsonCode(got) == codeInvalidParams
					if !off && !refused || off && method == "tasks/get" && refused {
						t.Errorf("%s by %q: %s", method, authz, got)
					}
				}
			}
			if n := rep.polls.Load(); off != (n == 4) {
				t.Errorf("%d refused tasks/* reached the replica", n)
			}
			if n := testutil.ToFloat64(gw.metrics.bindingRefused.WithLabelValues("task")); off != (n == 0) {
				t.Errorf("task refusals counted: %v", n)
			}
			if got := poll("tasks/get", "Bearer token-x"); !strings.Contains(got, `"status":"completed"`) {
				t.Errorf("the creator's poll: %s", got)
			}
		})
	}
}

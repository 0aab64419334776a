package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	josejwt "github.com/go-jose/go-jose/v4/jwt"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mcpfleet/mcpfleet/internal/authz"
	"github.com/mcpfleet/mcpfleet/internal/cache"
	"github.com/mcpfleet/mcpfleet/internal/identity"
	"github.com/mcpfleet/mcpfleet/internal/testserver"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// The rules of the worked example: mutate needs scope mcp:write, restart_*
// only for the on-call group.
var exampleRules = []authz.Rule{
	{Name: "mutate-needs-write", Match: `mcp.tool == "mutate" && !("mcp:write" in caller.scopes)`, Effect: authz.Deny, Scopes: []string{"mcp:write"}},
	{Name: "restart-oncall", Match: `mcp.tool.startsWith("restart_") && "oncall" in jwt.groups`, Effect: authz.Allow},
	{Name: "restart-others", Match: `mcp.tool.startsWith("restart_")`, Effect: authz.Deny},
}

// authzFleet is gateways with JWT verification and the example rules in
// front of three replicas that serve restart_now and restart_all too, and
// page their lists three entries at a time.
type authzFleet struct {
	fronts []*frontServer
	gws    []*Gateway
	calls  *testserver.Gauge
	idp    *issuer
}

func startAuthzFleet(t *testing.T, jsonAnswers bool, stores ...cache.Store) *authzFleet {
	t.Helper()
	f := &authzFleet{calls: &testserver.Gauge{}, idp: newIssuer(t, "k1")}
	v, err := identity.NewVerifier(identity.VerifyOptions{Issuers: []string{"https://idp"}, Audiences: []string{"mcp"}, KeepClaims: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.SetKeys(f.idp.jwks); err != nil {
		t.Fatal(err)
	}
	p, err := authz.Compile(exampleRules, authz.Allow)
	if err != nil {
		t.Fatal(err)
	}
	var specs []upstream.Spec
	for i := range 3 {
		name := fmt.Sprintf("replica-%c", 'a'+i)
		s, err := testserver.New(name, &testserver.Options{Calls: f.calls, Tools: []string{"restart_now", "restart_all"}, PageSize: 3, CacheTTL: replicaTTL, JSONResponse: jsonAnswers})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(s.Handler())
		t.Cleanup(hs.Close)
		specs = append(specs, upstream.Spec{Name: name, URL: hs.URL + "/mcp"})
	}
	if len(stores) == 0 {
		stores = []cache.Store{nil}
	}
	for _, c := range stores {
		o := &Options{Auth: v, Authz: p, RoutingSalt: []byte("shared-salt-0123456789")}
		if c != nil {
			o.Cache = c
		}
		gw := startGatewayOn(t, specs, o, io.Discard)
		front := newFront(gw)
		t.Cleanup(front.Close)
		f.gws, f.fronts = append(f.gws, gw), append(f.fronts, front)
	}
	return f
}

// token mints a token for sub with scope and groups.
func (f *authzFleet) token(t *testing.T, sub, scope string, groups ...string) string {
	t.Helper()
	s := f.idp.signer(t)
	c := josejwt.Claims{Issuer: "https://idp", Subject: sub, Audience: josejwt.Audience{"mcp"}, Expiry: josejwt.NewNumericDate(time.Now().Add(time.Hour))}
	extra := map[string]any{"scope": scope}
	if len(groups) > 0 {
		extra["groups"] = groups // no claim at all otherwise: a rule that reads it errors
	}
	tok, err := josejwt.Signed(s).Claims(c).Claims(extra).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// listToolPages lists every page of tools/list as token, accepting accept, and
// returns the names and the Content-Types the pages came in.
func listToolPages(t *testing.T, r *raw, token, accept string) (names, types []string) {
	t.Helper()
	params := map[string]any{}
	for page := 0; ; page++ {
		if page > 10 {
			t.Fatal("more than 10 pages")
		}
		resp := r.post(context.Background(), 7, "tools/list", params, map[string]string{"Authorization": "Bearer " + token, "Accept": accept})
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("tools/list: %d %s", resp.StatusCode, b)
		}
		types = append(types, resp.Header.Get("Content-Type"))
		var m struct {
			Result struct {
				Tools      []struct{ Name string } `json:"tools"`
				NextCursor string                  `json:"nextCursor"`
			} `json:"result"`
		}
		if err := json.Unmarshal(messageOf(b), &m); err != nil {
			t.Fatalf("tools/list answer %q: %v", b, err)
		}
		for _, tool := range m.Result.Tools {
			names = append(names, tool.Name)
		}
		if m.Result.NextCursor == "" {
			return names, types
		}
		params = map[string]any{"cursor": m.Result.NextCursor}
	}
}

// messageOf is the JSON-RPC message of a JSON or one-event SSE body.
func messageOf(b []byte) []byte {
	s := string(b)
	if !strings.HasPrefix(strings.TrimSpace(s), "{") {
		var data []string
		for line := range strings.SplitSeq(s, "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(d, `"result"`) {
				data = append(data, d)
			}
		}
		s = strings.Join(data, "")
	}
	return []byte(s)
}

// TestListsFilteredPerCaller: an mcp:read token lists neither mutate nor a
// restart_ tool, on every page, JSON or SSE, in a 2025-11-25 session and
// in 2026-07-28; an on-call token lists the restart tools, a write token
// mutate.
func TestListsFilteredPerCaller(t *testing.T) {
	for _, answers := range []string{"json", "sse"} {
		f := startAuthzFleet(t, answers == "json")
		read := f.token(t, "reader", "mcp:read")
		write := f.token(t, "writer", "mcp:read mcp:write")
		oncall := f.token(t, "pager", "mcp:read", "oncall")
		for _, era := range []string{"2026-07-28", "2025-11-25"} {
			t.Run(era+" "+answers, func(t *testing.T) {
				for _, tc := range []struct {
					token       string
					want, never []string
				}{
					{read, []string{"echo", "whoami"}, []string{"mutate", "restart_now", "restart_all"}},
					{write, []string{"echo", "mutate"}, []string{"restart_now", "restart_all"}},
					{oncall, []string{"echo", "restart_now", "restart_all"}, []string{"mutate"}},
				} {
					r := newRaw(t, f.fronts[0].URL+"/mcp", era)
					if era == "2025-11-25" {
						r.initializeAs(tc.token)
					}
					names, types := listToolPages(t, r, tc.token, "application/json, text/event-stream")
					if len(types) < 2 || strings.Contains(types[0], "json") != (answers == "json") {
						t.Errorf("pages of %v, want several of %s", types, answers)
					}
					for _, n := range tc.want {
						if !slices.Contains(names, n) {
							t.Errorf("%v lacks %s", names, n)
						}
					}
					for _, n := range tc.never {
						if slices.Contains(names, n) {
							t.Errorf("%v holds %s", names, n)
						}
					}
				}
			})
		}
	}
}

// initializeAs opens a legacy session as token.
func (r *raw) initializeAs(token string) {
	r.t.Helper()
	hdr := map[string]string{"Authorization": "Bearer " + token}
	resp := r.post(context.Background(), 1, "initialize", map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "raw", "version": "1"},
	}, hdr)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	r.session = resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || r.session == "" {
		r.t.Fatalf("initialize: status %d, session %q", resp.StatusCode, r.session)
	}
	resp = r.post(context.Background(), 0, "notifications/initialized", nil, hdr)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// TestCallsDenied: an mcp:read token's mutate gets 403 with the scope
// challenge and -32003, and no replica sees it; a write token runs it; an
// on-call token runs restart_now, which a read token may not (403 with no
// challenge: no scope lifts it).
func TestCallsDenied(t *testing.T) {
	f := startAuthzFleet(t, false)
	r := newRaw(t, f.fronts[0].URL+"/mcp", "2026-07-28")
	call := func(tok, tool string, args map[string]any) *http.Response {
		return r.post(context.Background(), 9, "tools/call", map[string]any{"name": tool, "arguments": args},
			map[string]string{"Authorization": "Bearer " + tok})
	}
	read := f.token(t, "reader", "mcp:read")
	resp := call(read, "mutate", map[string]any{"key": "k"})
	challenge := resp.Header.Get("WWW-Authenticate")
	code, msg := rpcError(t, resp)
	if resp.StatusCode != http.StatusForbidden || code != -32003 || !strings.Contains(msg, "mutate-needs-write") || strings.Contains(msg, "caller.scopes") {
		t.Errorf("read token's mutate: %d %d %q, want 403 -32003 naming the rule, not its expression", resp.StatusCode, code, msg)
	}
	if !strings.Contains(challenge, `Bearer error="insufficient_scope", scope="mcp:write", resource_metadata="http://`) {
		t.Errorf("challenge %q", challenge)
	}
	if n := f.calls.Method("tools/call"); n != 0 {
		t.Errorf("a replica saw %d calls, want none", n)
	}
	resp = call(read, "restart_now", nil)
	if code, _ := rpcError(t, resp); resp.StatusCode != http.StatusForbidden || code != -32003 || resp.Header.Get("WWW-Authenticate") != "" {
		t.Errorf("read token's restart_now: %d %d, challenge %q; want 403 with none", resp.StatusCode, code, resp.Header.Get("WWW-Authenticate"))
	}
	for _, ok := range []struct{ tok, tool string }{
		{f.token(t, "writer", "mcp:write"), "mutate"},
		{f.token(t, "pager", "mcp:read", "oncall"), "restart_now"},
	} {
		resp := call(ok.tok, ok.tool, map[string]any{"key": "k"})
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || strings.Contains(string(b), `"error"`) {
			t.Errorf("%s: %d %s", ok.tool, resp.StatusCode, b)
		}
	}
	if n := f.calls.Method("tools/call"); n != 2 {
		t.Errorf("replicas saw %d calls, want the 2 allowed", n)
	}
	m := f.gws[0].metrics.authz.decisions
	if d, a, z := testutil.ToFloat64(m.WithLabelValues("deny", "mutate-needs-write")), testutil.ToFloat64(m.WithLabelValues("allow", "default")),
		testutil.ToFloat64(m.WithLabelValues("allow", "restart-others")); d != 1 || a != 1 || z != 0 {
		t.Errorf("decisions: deny mutate-needs-write %v, allow default %v, allow restart-others %v; want 1, 1 and a zero series", d, a, z)
	}
	if v := f.gws[0].Fleet(time.Now()).Gateway.Authz; v == nil || v.Denied["mutate-needs-write"] != 1 || v.Allowed["restart-oncall"] != 1 || v.Denied["restart-others"] != 1 {
		t.Errorf("the fleet view's decisions: %+v", v)
	}
}

// TestCachedListsFilteredPerCaller: the cache keeps what the replicas
// said and each caller gets its own share of it, whichever caller missed
// first, with a local cache per gateway and with one shared in Redis.
func TestCachedListsFilteredPerCaller(t *testing.T) {
	for _, mode := range []string{"local", "redis"} {
		t.Run(mode, func(t *testing.T) {
			stores := []cache.Store{cache.NewLocal(0, 0)}
			if mode == "redis" {
				stores = sharedStores(t, 1)
			}
			f := startAuthzFleet(t, true, stores...)
			read := f.token(t, "reader", "mcp:read")
			all := f.token(t, "boss", "mcp:write", "oncall")
			r := newRaw(t, f.fronts[0].URL+"/mcp", "2026-07-28")
			for i, tok := range []string{read, all, read, all} {
				names, _ := listToolPages(t, r, tok, "application/json, text/event-stream")
				full := tok == all
				if slices.Contains(names, "mutate") != full || slices.Contains(names, "restart_now") != full {
					t.Errorf("request %d (full list %v): %v", i, full, names)
				}
			}
			if hits := testutil.ToFloat64(f.gws[0].metrics.cache.WithLabelValues("tools/list", "hit")); hits == 0 {
				t.Error("no list came from the cache: the probe proves nothing")
			}
		})
	}
}

// TestAuthzInTheTrace: the server span says which rule decided and how,
// and a denied call has no attempt at a replica.
func TestAuthzInTheTrace(t *testing.T) {
	p, err := authz.Compile([]authz.Rule{{Name: "no-mutate", Match: `mcp.tool == "mutate"`, Effect: authz.Deny}}, authz.Allow)
	if err != nil {
		t.Fatal(err)
	}
	f := startTraced(t, 1, false, &Options{Authz: p})
	r := newRaw(t, f.front.URL+"/mcp", "2026-07-28")
	f.call(t, r, 1, "mutate", map[string]any{"traceparent": clientParent}, nil)
	f.call(t, r, 2, "whoami", map[string]any{"traceparent": clientParent}, nil)
	trees := spansOf(t, f.spans, clientTrace)
	if len(trees) != 2 {
		t.Fatalf("%d server spans, want 2", len(trees))
	}
	for _, tr := range trees {
		rule, decision := attr(tr.server, "mcpfleet.authz.rule"), attr(tr.server, "mcpfleet.authz.decision")
		switch attr(tr.server, "jsonrpc.request.id") {
		case "1":
			if rule != "no-mutate" || decision != "deny" || len(tr.clients) != 0 {
				t.Errorf("mutate: rule %q decision %q, %d attempts", rule, decision, len(tr.clients))
			}
		default:
			if rule != "default" || decision != "allow" || len(tr.clients) != 1 {
				t.Errorf("whoami: rule %q decision %q, %d attempts", rule, decision, len(tr.clients))
			}
		}
	}
}

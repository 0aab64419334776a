package gateway

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/cache"
	"github.com/mcpfleet/mcpfleet/internal/cache/rediscache"
	"github.com/mcpfleet/mcpfleet/internal/store"
	"github.com/mcpfleet/mcpfleet/internal/store/redistest"
	"github.com/mcpfleet/mcpfleet/internal/testproc"
	"github.com/mcpfleet/mcpfleet/internal/testserver"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// cachedFleet is gateways with caches in front of three replicas that give
// SEP-2549 hints and count what they run.
type cachedFleet struct {
	fronts  []*frontServer
	gws     []*Gateway
	calls   *testserver.Gauge
	servers []*testserver.Server
	logs    *syncBuffer
}

const replicaTTL = 30 * time.Second

func startCached(t *testing.T, rules cache.Rules, stores ...cache.Store) *cachedFleet {
	t.Helper()
	f := &cachedFleet{calls: &testserver.Gauge{}, logs: &syncBuffer{}}
	var specs []upstream.Spec
	for i := range 3 {
		name := fmt.Sprintf("replica-%c", 'a'+i)
		s, err := testserver.New(name, &testserver.Options{Calls: f.calls, CacheTTL: replicaTTL})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(s.Handler())
		t.Cleanup(hs.Close)
		f.servers = append(f.servers, s)
		specs = append(specs, upstream.Spec{Name: name, URL: hs.URL + "/mcp"})
	}
	for _, c := range stores {
		gw := startGatewayOn(t, specs, &Options{Cache: c, CacheRules: rules, RoutingSalt: []byte("shared-salt-0123456789")}, f.logs)
		front := newFront(gw)
		t.Cleanup(front.Close)
		f.gws, f.fronts = append(f.gws, gw), append(f.fronts, front)
	}
	return f
}

func sharedStores(t *testing.T, n int) []cache.Store {
	t.Helper()
	addr := redistest.Start(t)
	var out []cache.Store
	for range n {
		client, err := store.NewRedisClient("redis://" + addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { client.Close() })
		out = append(out, rediscache.New(client, "test:cache:", 0, time.Hour))
	}
	return out
}

// ask sends one 2026-07-28 request as token and returns the result object.
func ask(t *testing.T, r *raw, method string, params map[string]any, token string) map[string]json.RawMessage {
	t.Helper()
	hdr := map[string]string{}
	if token != "" {
		hdr["Authorization"] = "Bearer " + token
	}
	if uri, ok := params["uri"].(string); ok {
		hdr["Mcp-Name"] = uri // SEP-2243
	}
	resp := r.post(context.Background(), 41, method, params, hdr)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("%s: status %d: %s", method, resp.StatusCode, b)
	}
	if i := strings.Index(string(b), "data: "); i >= 0 { // an SSE answer
		b = []byte(strings.TrimSpace(strings.SplitN(string(b[i+6:]), "\n", 2)[0]))
	}
	var m struct {
		ID     json.RawMessage            `json:"id"`
		Result map[string]json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(b, &m); err != nil || m.Result == nil {
		t.Fatalf("%s: answer %s", method, b)
	}
	if string(m.ID) != "41" {
		t.Fatalf("%s: answered under id %s, want the request's 41", method, m.ID)
	}
	return m.Result
}

func readParams(uri string) map[string]any { return map[string]any{"uri": uri} }

// TestCacheSharedAcrossGateways: 12 callers through two gateways sharing
// Redis cost the replicas one tools/list and one read of a public resource.
func TestCacheSharedAcrossGateways(t *testing.T) {
	f := startCached(t, cache.Rules{}, sharedStores(t, 2)...)
	for i := range 12 {
		r := newRaw(t, f.fronts[i%2].URL+"/mcp", "2026-07-28")
		tok := fmt.Sprintf("caller-%d", i)
		list := ask(t, r, "tools/list", nil, tok)
		cat := ask(t, r, "resources/read", readParams(testserver.CatalogURI), tok)
		for _, res := range []map[string]json.RawMessage{list, cat} {
			var ttl int64
			json.Unmarshal(res["ttlMs"], &ttl)
			if string(res["cacheScope"]) != `"public"` || ttl <= 0 || ttl > replicaTTL.Milliseconds() {
				t.Fatalf("caller %d: cacheScope %s ttlMs %d: want public and at most %d", i, res["cacheScope"], ttl, replicaTTL.Milliseconds())
			}
		}
	}
	if n, m := f.calls.Method("tools/list"), f.calls.Read(testserver.CatalogURI); n != 1 || m != 1 {
		t.Fatalf("12 callers through 2 gateways sharing a cache: %d tools/list and %d catalog reads at the replicas, want 1 and 1", n, m)
	}
	hits := testutil.ToFloat64(f.gws[0].metrics.cache.WithLabelValues("tools/list", "hit")) +
		testutil.ToFloat64(f.gws[1].metrics.cache.WithLabelValues("tools/list", "hit"))
	if hits != 11 {
		t.Errorf("tools/list hits = %v, want 11", hits)
	}
	if !strings.Contains(f.logs.String(), `"cache":"hit"`) || !strings.Contains(f.logs.String(), `"cache":"miss"`) {
		t.Error("the access log does not say cache=hit|miss")
	}
}

// TestCacheLocalPerGateway: with a local cache each gateway keeps its own
// copy: three gateways cost at most three executions.
func TestCacheLocalPerGateway(t *testing.T) {
	f := startCached(t, cache.Rules{}, cache.NewLocal(0, 0), cache.NewLocal(0, 0), cache.NewLocal(0, 0))
	for i := range 12 {
		r := newRaw(t, f.fronts[i%3].URL+"/mcp", "2026-07-28")
		ask(t, r, "tools/list", nil, fmt.Sprintf("caller-%d", i))
		ask(t, r, "resources/read", readParams(testserver.CatalogURI), fmt.Sprintf("caller-%d", i))
	}
	if n, m := f.calls.Method("tools/list"), f.calls.Read(testserver.CatalogURI); n > 3 || m > 3 || n == 0 {
		t.Fatalf("three local caches: %d tools/list and %d reads, want 1 to 3 each", n, m)
	}
}

func profileText(t *testing.T, res map[string]json.RawMessage) string {
	t.Helper()
	var c []struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(res["contents"], &c); err != nil || len(c) == 0 {
		t.Fatalf("contents %s", res["contents"])
	}
	return c[0].Text
}

// TestPrivateEntriesStayPrivate: a private resource read by alice is never
// answered to bob, nor to a JWT forged with alice's iss and sub; requests
// with requestState run every time.
func TestPrivateEntriesStayPrivate(t *testing.T) {
	f := startCached(t, cache.Rules{}, sharedStores(t, 1)...)
	r := newRaw(t, f.fronts[0].URL+"/mcp", "2026-07-28")
	jwt := func(sig string) string {
		seg := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
		return seg(`{"alg":"RS256"}`) + "." + seg(`{"iss":"https://idp","sub":"alice"}`) + "." + seg(sig)
	}
	alice, forged := jwt("alice's signature"), jwt("forged")
	a1 := ask(t, r, "resources/read", readParams(testserver.ProfileURI), alice)
	a2 := ask(t, r, "resources/read", readParams(testserver.ProfileURI), alice)
	if string(a1["cacheScope"]) != `"private"` || profileText(t, a1) != profileText(t, a2) {
		t.Fatalf("alice's profile: %s then %s", a1["contents"], a2["contents"])
	}
	if n := f.calls.Read(testserver.ProfileURI); n != 1 {
		t.Fatalf("alice read her profile twice: %d executions, want 1", n)
	}
	for _, who := range []string{"bob", forged} {
		got := ask(t, r, "resources/read", readParams(testserver.ProfileURI), who)
		if profileText(t, got) == profileText(t, a1) {
			t.Fatalf("%.12s... got alice's private answer", who)
		}
	}
	if n := f.calls.Read(testserver.ProfileURI); n != 3 {
		t.Fatalf("bob and a forger each asked once: %d executions in all, want 3", n)
	}
	if got := ask(t, r, "resources/read", readParams(testserver.ProfileURI), ""); strings.Contains(profileText(t, got), profileText(t, a1)) {
		t.Fatal("a caller without a credential got alice's answer")
	}
	before := f.calls.Method("resources/read")
	for range 3 {
		resp := r.post(context.Background(), 9, "resources/read", map[string]any{"uri": testserver.CatalogURI, "requestState": "s1"},
			map[string]string{"Authorization": "Bearer " + alice, "Mcp-Name": testserver.CatalogURI})
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if n := f.calls.Method("resources/read") - before; n != 3 {
		t.Fatalf("3 requests with requestState: %d reached a replica, want 3", n)
	}
}

// TestReadOnlyToolResults: a configured read-only tool runs once per caller
// and arguments until cache.ttl; a configured tool the replicas do not
// declare read-only runs every time.
func TestReadOnlyToolResults(t *testing.T) {
	ttl := 400 * time.Millisecond
	// The store's clock moves only when a step waits: however slow a
	// call, the steps before cache.ttl come before it.
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	f := startCached(t, cache.Rules{Tools: map[string]bool{"lookup": true, "fetch": true}, ToolTTL: ttl}, cache.NewLocalAt(0, 0, clock))
	r := newRaw(t, f.fronts[0].URL+"/mcp", "2026-07-28")
	ask(t, r, "tools/list", nil, "alice") // the gateway learns the annotations
	steps := []struct {
		what          string
		tool, who, ak string
		wait          time.Duration
		runs          int // of tool, in all, after the step
	}{
		{"alice", "lookup", "alice", "k", 0, 1},
		{"alice again, same arguments", "lookup", "alice", "k", 0, 1},
		{"bob, same arguments", "lookup", "bob", "k", 0, 2},
		{"alice, other arguments", "lookup", "alice", "other", 0, 3},
		{"alice after cache.ttl", "lookup", "alice", "k", ttl + 100*time.Millisecond, 4},
		{"a tool not declared read-only", "fetch", "alice", "k", 0, 1},
		{"the same again", "fetch", "alice", "k", 0, 2},
	}
	for _, st := range steps {
		mu.Lock()
		now = now.Add(st.wait)
		mu.Unlock()
		ask(t, r, "tools/call", map[string]any{"name": st.tool, "arguments": map[string]any{"key": st.ak}}, st.who)
		if n := f.calls.Started(st.tool); n != st.runs {
			t.Fatalf("%s: %s ran %d times, want %d", st.what, st.tool, n, st.runs)
		}
	}
}

// TestListChangedInvalidates: a replica's notifications/tools/list_changed,
// relayed on a stream through the gateway, drops the cached tools/list.
func TestListChangedInvalidates(t *testing.T) {
	f := startCached(t, cache.Rules{}, cache.NewLocal(0, 0))
	r := newRaw(t, f.fronts[0].URL+"/mcp", "2026-07-28")
	ask(t, r, "tools/list", nil, "alice")
	ask(t, r, "tools/list", nil, "alice")
	if n := f.calls.Method("tools/list"); n != 1 {
		t.Fatalf("tools/list twice: %d executions, want 1", n)
	}
	// A legacy client's standalone stream carries the replica's
	// notifications through the gateway.
	connect(t, f.fronts[0].URL+"/mcp", "2025-11-25", nil)
	deadline := time.Now().Add(5 * time.Second)
	for testutil.ToFloat64(f.gws[0].metrics.streams) == 0 { // its GET stream opens
		if time.Now().After(deadline) {
			t.Fatal("the legacy client's stream never opened")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, s := range f.servers {
		s.AddTool("brand-new")
	}
	deadline = time.Now().Add(5 * time.Second)
	for testutil.ToFloat64(f.gws[0].metrics.cacheInvalidations) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no invalidation after list_changed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	before := f.calls.Method("tools/list")
	ask(t, r, "tools/list", nil, "alice")
	if n := f.calls.Method("tools/list"); n != before+1 {
		t.Fatalf("tools/list after list_changed: %d executions, want %d", n, before+1)
	}
}

// TestCacheLegacyEraAndStoreDown: a legacy session's tools/list follows the
// same rules (kept when its result carries hints); with the shared store
// down the replica answers and nothing fails.
func TestCacheLegacyEraAndStoreDown(t *testing.T) {
	f := startCached(t, cache.Rules{}, cache.NewLocal(0, 0))
	var hinted bool
	for range 2 {
		r := newRaw(t, f.fronts[0].URL+"/mcp", "2025-11-25")
		r.initialize()
		resp := r.post(context.Background(), 5, "tools/list", nil, map[string]string{"Authorization": "Bearer alice"})
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"id":5`) {
			t.Fatalf("legacy tools/list: %d %s", resp.StatusCode, b)
		}
		hinted = strings.Contains(string(b), `"ttlMs":`) && !strings.Contains(string(b), `"ttlMs":0`)
	}
	want := 2
	if hinted {
		want = 1
	}
	t.Logf("legacy results carry hints: %v", hinted)
	if n := f.calls.Method("tools/list"); n != want {
		t.Fatalf("two legacy sessions' tools/list (hints: %v): %d executions, want %d", hinted, n, want)
	}

	client, err := store.NewRedisClient("redis://" + testproc.FreeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	down := startCached(t, cache.Rules{}, rediscache.New(client, "x:", 0, time.Hour))
	r := newRaw(t, down.fronts[0].URL+"/mcp", "2026-07-28")
	for range 2 {
		ask(t, r, "tools/list", nil, "alice")
	}
	if n := down.calls.Method("tools/list"); n != 2 {
		t.Fatalf("store down: %d executions, want 2 (every request to the replica)", n)
	}
	if testutil.ToFloat64(down.gws[0].metrics.cacheErrors) == 0 {
		t.Fatal("store down, but no cache error counted")
	}
}

// TestAnnotationsLearnedFromCachedList: a gateway that sees tools/list only
// as a hit from the shared cache still learns which tools are read-only.
func TestAnnotationsLearnedFromCachedList(t *testing.T) {
	f := startCached(t, cache.Rules{Tools: map[string]bool{"lookup": true}}, sharedStores(t, 2)...)
	ask(t, newRaw(t, f.fronts[0].URL+"/mcp", "2026-07-28"), "tools/list", nil, "alice")
	second := newRaw(t, f.fronts[1].URL+"/mcp", "2026-07-28")
	ask(t, second, "tools/list", nil, "alice") // a hit: the replicas see one list
	for range 2 {
		ask(t, second, "tools/call", map[string]any{"name": "lookup", "arguments": map[string]any{"key": "k"}}, "alice")
	}
	if n, l := f.calls.Started("lookup"), f.calls.Method("tools/list"); n != 1 || l != 1 {
		t.Fatalf("lookup ran %d times and tools/list %d: want 1 and 1", n, l)
	}
}

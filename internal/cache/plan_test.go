package cache

import (
	"encoding/json"
	"testing"
	"time"
)

var rules = Rules{Tools: map[string]bool{"lookup": true, "fetch": true}, ToolTTL: time.Minute, MaxTTL: time.Hour}

func TestPlan(t *testing.T) {
	v := "2026-07-28"
	tests := []struct {
		name       string
		q          Request
		ok         bool
		bypass     string
		public     bool
		private    bool
		toolLookup bool
	}{
		{name: "not a cached method", q: Request{Method: "tools/call-ish"}},
		{name: "initialize never", q: Request{Method: "initialize"}},
		{name: "tools/list with a credential", q: Request{Method: "tools/list", Version: v, Caller: "a"}, ok: true, public: true, private: true},
		{name: "tools/list without", q: Request{Method: "tools/list", Version: v}, ok: true, public: true},
		{name: "requestState", q: Request{Method: "resources/read", Params: []byte(`{"uri":"x","requestState":"abc"}`), Caller: "a"}, ok: true, bypass: BypassInput},
		{name: "inputResponses", q: Request{Method: "tools/list", Params: []byte(`{"inputResponses":{"1":{}}}`)}, ok: true, bypass: BypassInput},
		{name: "null requestState is none", q: Request{Method: "tools/list", Params: []byte(`{"requestState":null}`)}, ok: true, public: true},
		{name: "bad params", q: Request{Method: "tools/list", Params: []byte(`{"cursor":1}`)}, ok: true, bypass: BypassParams},
		{name: "tool not named", q: Request{Method: "tools/call", Params: []byte(`{"name":"other"}`), Caller: "a", ReadOnly: true}, ok: true, bypass: BypassTool},
		{name: "tool not read-only", q: Request{Method: "tools/call", Params: []byte(`{"name":"fetch"}`), Caller: "a"}, ok: true, bypass: BypassReadOnly},
		{name: "tool without a credential", q: Request{Method: "tools/call", Params: []byte(`{"name":"lookup"}`), ReadOnly: true}, ok: true, bypass: BypassCaller},
		{name: "tool", q: Request{Method: "tools/call", Params: []byte(`{"name":"lookup","arguments":{"k":1}}`), Caller: "a", ReadOnly: true}, ok: true, private: true, toolLookup: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, ok := Plan(tt.q, rules)
			if ok != tt.ok || l.Bypass != tt.bypass || (l.Public != "") != tt.public || (l.Private != "") != tt.private || l.Tool != tt.toolLookup {
				t.Fatalf("Plan = %+v, %v", l, ok)
			}
			if ok && l.Bypass == "" && l.Gen == "" {
				t.Fatal("no generation")
			}
		})
	}
}

func TestPlanKeys(t *testing.T) {
	key := func(q Request) Lookup { l, _ := Plan(q, rules); return l }
	read := func(uri, caller string) Lookup {
		return key(Request{Method: "resources/read", Version: "2026-07-28", Params: []byte(`{"uri":"` + uri + `"}`), Caller: caller})
	}
	call := func(args, caller string) Lookup {
		return key(Request{Method: "tools/call", Version: "2026-07-28", Params: []byte(`{"name":"lookup","arguments":` + args + `}`), Caller: caller, ReadOnly: true})
	}
	alice, bob := read("u", "alice"), read("u", "bob")
	switch {
	case alice.Public != bob.Public:
		t.Error("one public entry per caller: want one for everyone")
	case alice.Private == bob.Private:
		t.Error("alice and bob share a private entry")
	case read("u", "").Public == alice.Public:
		t.Error("a caller without a credential shares the public entry of callers with one")
	case read("v", "alice").Gen == alice.Gen:
		t.Error("two URIs share a generation")
	case read("u", "bob").Gen != alice.Gen:
		t.Error("one URI, two generations")
	case call(`{"a":1,"b":[2,"x"]}`, "alice").Private != call(` { "b" : [2, "\u0078"], "a":1 } `, "alice").Private:
		t.Error("the same arguments spelled two ways give two keys")
	case call(`{"a":1}`, "alice").Private == call(`{"a":2}`, "alice").Private:
		t.Error("different arguments share a key")
	case call(`{"a":1}`, "alice").Private == call(`{"a":1}`, "bob").Private:
		t.Error("two callers share a tool result")
	case key(Request{Method: "tools/list", Version: "2025-11-25"}).Public == key(Request{Method: "tools/list", Version: "2026-07-28"}).Public:
		t.Error("two protocol versions share an answer")
	case key(Request{Method: "tools/list", Params: []byte(`{"cursor":"p2"}`)}).Public == key(Request{Method: "tools/list"}).Public:
		t.Error("two pages share an answer")
	}
}

func TestKeep(t *testing.T) {
	list, _ := Plan(Request{Method: "tools/list", Version: "2026-07-28", Caller: "alice"}, rules)
	anon, _ := Plan(Request{Method: "tools/list", Version: "2026-07-28"}, rules)
	tool, _ := Plan(Request{Method: "tools/call", Params: []byte(`{"name":"lookup"}`), Caller: "alice", ReadOnly: true}, rules)
	resp := func(result string) []byte { return []byte(`{"jsonrpc":"2.0","id":1,"result":` + result + `}`) }
	tests := []struct {
		name string
		l    Lookup
		msg  []byte
		key  string // "" means not kept
		ttl  time.Duration
	}{
		{"public", list, resp(`{"tools":[],"ttlMs":30000,"cacheScope":"public"}`), list.Public, 30 * time.Second},
		{"private", list, resp(`{"tools":[],"ttlMs":30000,"cacheScope":"private"}`), list.Private, 30 * time.Second},
		{"no scope is private", list, resp(`{"tools":[],"ttlMs":30000}`), list.Private, 30 * time.Second},
		{"private without a credential", anon, resp(`{"tools":[],"ttlMs":30000,"cacheScope":"private"}`), "", 0},
		{"ttl 0", list, resp(`{"tools":[],"ttlMs":0,"cacheScope":"public"}`), "", 0},
		{"no ttl", list, resp(`{"tools":[],"cacheScope":"public"}`), "", 0},
		{"negative ttl", list, resp(`{"tools":[],"ttlMs":-5,"cacheScope":"public"}`), "", 0},
		{"capped at the max", list, resp(`{"tools":[],"ttlMs":86400000,"cacheScope":"public"}`), list.Public, time.Hour},
		{"input required", list, resp(`{"resultType":"input_required","inputRequests":{},"ttlMs":30000,"cacheScope":"public"}`), "", 0},
		{"an error", list, []byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"x"}}`), "", 0},
		{"complete", list, resp(`{"resultType":"complete","tools":[],"ttlMs":1000,"cacheScope":"public"}`), list.Public, time.Second},
		{"tool result", tool, resp(`{"content":[{"type":"text","text":"v"}]}`), tool.Private, time.Minute},
		{"tool error", tool, resp(`{"content":[],"isError":true}`), "", 0},
		{"tool task", tool, resp(`{"resultType":"task","taskId":"t1"}`), "", 0},
		{"not JSON", list, []byte(`{"jsonrpc"`), "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, ok := Keep(tt.l, tt.msg, rules)
			if ok != (tt.key != "") || e.Key != tt.key || (ok && e.TTL != tt.ttl) {
				t.Fatalf("Keep = %+v, %v; want key %q ttl %v", e, ok, tt.key, tt.ttl)
			}
		})
	}
}

func TestAnswer(t *testing.T) {
	out, err := Answer([]byte(`{"tools":[{"name":"a"}],"ttlMs":30000,"cacheScope":"private"}`), []byte(`"req-7"`), 12345*time.Millisecond, false)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		ID     string `json:"id"`
		Result struct {
			TTLMs      int64  `json:"ttlMs"`
			CacheScope string `json:"cacheScope"`
			Tools      []any  `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	if m.ID != "req-7" || m.Result.TTLMs != 12345 || m.Result.CacheScope != "private" || len(m.Result.Tools) != 1 {
		t.Fatalf("answer %s", out)
	}
	// Never more than the replica gave, even if the store's clock says so.
	out, _ = Answer([]byte(`{"ttlMs":1000}`), []byte(`1`), time.Hour, false)
	if string(out) != `{"jsonrpc":"2.0","id":1,"result":{"ttlMs":1000}}` {
		t.Fatalf("answer %s", out)
	}
}

func TestInvalidatedBy(t *testing.T) {
	l, _ := Plan(Request{Method: "resources/read", Params: []byte(`{"uri":"file:///a"}`)}, rules)
	tl, _ := Plan(Request{Method: "tools/list"}, rules)
	rl, _ := Plan(Request{Method: "resources/templates/list"}, rules)
	if InvalidatedBy("notifications/resources/updated", []byte(`{"uri":"file:///a"}`)) != l.Gen ||
		InvalidatedBy("notifications/tools/list_changed", nil) != tl.Gen ||
		InvalidatedBy("notifications/resources/list_changed", nil) != rl.Gen ||
		InvalidatedBy("notifications/progress", nil) != "" {
		t.Fatal("a notification moves the wrong generation")
	}
}

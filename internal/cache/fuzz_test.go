package cache

import (
	"encoding/json"
	"testing"
	"time"
)

// FuzzPlan: any params decode or bypass; callers never share a private key.
func FuzzPlan(f *testing.F) {
	for _, s := range []string{`{"uri":"file:///a"}`, `{"name":"lookup","arguments":{"b":1,"a":[1,2]}}`, `{"cursor":"x"}`, `{"requestState":"s"}`, `[`, `null`} {
		f.Add("resources/read", []byte(s))
		f.Add("tools/call", []byte(s))
	}
	f.Fuzz(func(t *testing.T, method string, params []byte) {
		q := Request{Method: method, Version: "2026-07-28", Params: params, ReadOnly: true}
		q.Caller = "alice"
		a, ok := Plan(q, rules)
		q.Caller = "bob"
		b, _ := Plan(q, rules)
		if ok && a.Bypass == "" && (a.Private == "" || a.Private == b.Private) {
			t.Fatalf("alice and bob share a private key: %+v %+v", a, b)
		}
	})
}

// FuzzKeep: any answer is kept or not without a panic, and a kept one
// answers as valid JSON under the request's id.
func FuzzKeep(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[],"ttlMs":30000,"cacheScope":"public"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"ttlMs":1e400}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"ttlMs":5,"cacheScope":"private","x":"\ud800"}}`,
		`{"jsonrpc":"2.0","id":1,"error":{}}`,
	} {
		f.Add([]byte(s))
	}
	l, _ := Plan(Request{Method: "tools/list", Caller: "alice"}, rules)
	f.Fuzz(func(t *testing.T, msg []byte) {
		e, ok := Keep(l, msg, rules)
		if !ok {
			return
		}
		if e.TTL <= 0 || e.TTL > rules.MaxTTL {
			t.Fatalf("ttl %v", e.TTL)
		}
		out, err := Answer(e.Value, []byte(`7`), time.Second, false)
		if err == nil && !json.Valid(out) {
			t.Fatalf("answer is not JSON: %q", out)
		}
	})
}

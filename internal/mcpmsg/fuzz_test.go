package mcpmsg

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// FuzzParse checks the scanner against encoding/json: whatever Parse accepts
// is valid JSON, and the members it extracts are the ones a full decode sees.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`{"jsonrpc":"2.0","id":"x","method":"initialize","params":{}}`,
		`[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","id":1,"result":null}]`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"a\u0041\n"}}`,
		`{"jsonrpc":"2.0","id":-1.5e3,"method":"x"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"a","_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","tracestate":"k=v","baggage":"a=b"}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := Parse(body)
		if err != nil {
			return
		}
		if !json.Valid(body) {
			t.Fatalf("Parse accepted invalid JSON %q", body)
		}
		if m.Batch {
			return
		}
		// One spelling only: an accepted message names no member twice.
		if err := Members(body, func([]byte, int, int) error { return nil }); errors.Is(err, ErrDuplicateMember) {
			t.Fatalf("Parse accepted %q, which names a member twice", body)
		}
		// Maps match keys exactly, as JSON-RPC does (a struct would fold case).
		var top map[string]json.RawMessage
		if json.Unmarshal(body, &top) != nil {
			t.Fatalf("Parse accepted %q, which is not an object", body)
		}
		var method string
		_ = json.Unmarshal(top["method"], &method)
		if m.Method != method {
			t.Errorf("method = %q, encoding/json says %q", m.Method, method)
		}
		if m.ID != nil && !bytes.Equal(m.ID, top["id"]) {
			t.Errorf("id = %s, encoding/json says %s", m.ID, top["id"])
		}
		var params map[string]json.RawMessage
		if m.Method == "" || json.Unmarshal(top["params"], &params) != nil {
			return
		}
		var name, version, parent, state, bag string
		if key := nameMember(m.Method); key != "" {
			_ = json.Unmarshal(params[key], &name)
		}
		var meta map[string]json.RawMessage
		if json.Unmarshal(params["_meta"], &meta) == nil {
			_ = json.Unmarshal(meta[MetaKeyProtocolVersion], &version)
			_ = json.Unmarshal(meta["traceparent"], &parent)
			_ = json.Unmarshal(meta["tracestate"], &state)
			_ = json.Unmarshal(meta["baggage"], &bag)
		}
		if m.Trace.Traceparent != parent || m.Trace.Tracestate != state || m.Trace.Baggage != bag {
			t.Errorf("trace = %+v, encoding/json says %q %q %q", m.Trace, parent, state, bag)
		}
		if at := m.Trace.ParentAt; at != [2]int{} {
			var v string
			if json.Unmarshal(body[at[0]:at[1]], &v) != nil || v != parent {
				t.Errorf("traceparent at %v is %q, want %q", at, body[at[0]:at[1]], parent)
			}
		}
		if m.Name != name {
			t.Errorf("name = %q, encoding/json says %q", m.Name, name)
		}
		if m.ProtocolVersion != version {
			t.Errorf("version = %q, encoding/json says %q", m.ProtocolVersion, version)
		}
	})
}

// FuzzParseTaskResult: untrusted answers never panic the task reader, and a
// task it reports is really in the body.
func FuzzParseTaskResult(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":3,"result":{"resultType":"task","taskId":"t-9","ttlMs":5}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		id, _, ok := ParseTaskResult(body)
		if ok && !bytes.Contains(body, []byte("task")) {
			t.Fatalf("task %q reported from %q", id, body)
		}
	})
}

// FuzzAnswerOutcome: an answer's error code and isError are what a full
// decode finds.
func FuzzAnswerOutcome(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":3,"result":{"content":[],"isError":true}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"x"}}`))
	f.Add([]byte(`{"error":{"code":-1},"result":{"isError":true}}`))
	f.Add([]byte(`{"result":{"isError":true,"isError":false},"error":{"code":5},"error":{}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		o, ok := AnswerOutcome(body)
		if !ok {
			return
		}
		// A result may be any value (only an object's isError counts); an
		// error must be an object with an integer code.
		var top map[string]json.RawMessage
		if json.Unmarshal(body, &top) != nil {
			t.Fatalf("AnswerOutcome accepted %q, which encoding/json does not", body)
		}
		// Maps, not structs: encoding/json folds the case of a struct's
		// members, JSON-RPC's are exact.
		var e map[string]json.RawMessage
		var code int64
		if raw, ok := top["error"]; ok {
			if json.Unmarshal(raw, &e) != nil || e == nil {
				t.Fatalf("AnswerOutcome accepted the error of %q, which encoding/json does not decode", body)
			}
			if c, ok := e["code"]; ok && json.Unmarshal(c, &code) != nil {
				t.Fatalf("AnswerOutcome accepted the code of %q, which is no integer to encoding/json", body)
			}
		}
		if o.HasError != (e != nil) || o.Code != code {
			t.Errorf("outcome %+v of %q, encoding/json says error %v code %d", o, body, e != nil, code)
		}
		var r map[string]json.RawMessage
		if raw, ok := top["result"]; ok && json.Unmarshal(raw, &r) == nil && r != nil {
			if want := string(r["isError"]) == "true"; o.IsError != want {
				t.Errorf("outcome %+v of %q, encoding/json says isError %v", o, body, want)
			}
		}
	})
}

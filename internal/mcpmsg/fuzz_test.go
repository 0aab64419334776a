package mcpmsg

import (
	"bytes"
	"encoding/json"
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
		var name, version string
		if key := nameMember(m.Method); key != "" {
			_ = json.Unmarshal(params[key], &name)
		}
		var meta map[string]json.RawMessage
		if json.Unmarshal(params["_meta"], &meta) == nil {
			_ = json.Unmarshal(meta[MetaKeyProtocolVersion], &version)
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

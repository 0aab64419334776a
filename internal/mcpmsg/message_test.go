package mcpmsg

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		body string
		want Message
		err  error
	}{
		{
			name: "tools/call with meta",
			body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi","nested":[1,{"a":null}]},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":1,"io.mcpfleet/idempotency-key":"op-9"}}}`,
			want: Message{Kind: KindRequest, Count: 1, Method: "tools/call", ID: []byte("7"), Name: "echo", ProtocolVersion: "2026-07-28", IdempotencyKey: "op-9"},
		},
		{
			name: "initialize with string id",
			body: ` {"method":"initialize","jsonrpc":"2.0","id":"a\"b","params":{"protocolVersion":"2025-11-25"}} `,
			want: Message{Kind: KindRequest, Count: 1, Method: "initialize", ID: []byte(`"a\"b"`), HasInitialize: true},
		},
		{
			name: "notification",
			body: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`,
			want: Message{Kind: KindNotification, Count: 1, Method: "notifications/cancelled"},
		},
		{
			name: "response",
			body: `{"jsonrpc":"2.0","id":1,"result":{}}`,
			want: Message{Kind: KindResponse, Count: 1, ID: []byte("1")},
		},
		{
			name: "escaped name",
			body: `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:\/\/a\u00e9"}}`,
			want: Message{Kind: KindRequest, Count: 1, Method: "resources/read", ID: []byte("1"), Name: "file://aé"},
		},
		{
			name: "task id",
			body: `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"t-1"}}`,
			want: Message{Kind: KindRequest, Count: 1, Method: "tasks/get", ID: []byte("1"), Name: "t-1"},
		},
		{
			name: "batch takes the first request",
			body: `[{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`,
			want: Message{Kind: KindRequest, Batch: true, Count: 2, Method: "ping", ID: []byte("2")},
		},
		{name: "empty", body: ``, err: ErrParse},
		{name: "truncated", body: `{"jsonrpc":"2.0","id":1,"method":"pi`, err: ErrParse},
		{name: "trailing garbage", body: `{"jsonrpc":"2.0","id":1,"method":"ping"} x`, err: ErrParse},
		{name: "not an object", body: `42`, err: ErrInvalidRequest},
		{name: "wrong version", body: `{"jsonrpc":"1.0","id":1,"method":"ping"}`, err: ErrInvalidRequest},
		{name: "method not a string", body: `{"jsonrpc":"2.0","id":1,"method":5}`, err: ErrInvalidRequest},
		{name: "empty batch", body: `[]`, err: ErrInvalidRequest},
		{name: "neither request nor response", body: `{"jsonrpc":"2.0","id":1}`, err: ErrInvalidRequest},
		{name: "bad escape", body: `{"jsonrpc":"2.0","id":1,"method":"p\q"}`, err: ErrParse},
		{name: "deep nesting", body: deep(2000), err: ErrParse},
		// A member named twice where the gateway decides: a reader keeping
		// the first and one keeping the last would route, limit or authorize
		// two different calls.
		{name: "method twice", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{"name":"rm"}}`, err: ErrDuplicateMember},
		{name: "id twice", body: `{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`, err: ErrInvalidRequest},
		{name: "params twice", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"},"params":{"name":"b"}}`, err: ErrDuplicateMember},
		{name: "tool name twice, once escaped", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","\u006eame":"b"}}`, err: ErrDuplicateMember},
		{name: "_meta member twice", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, err: ErrDuplicateMember},
		{name: "a response's members twice", body: `{"jsonrpc":"2.0","id":1,"result":{},"result":{}}`, err: ErrDuplicateMember},
		{name: "twice in a batch's message", body: `[{"jsonrpc":"2.0","id":1,"method":"a","method":"b"}]`, err: ErrDuplicateMember},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.body))
			if !errors.Is(err, tt.err) {
				t.Fatalf("Parse error = %v, want %v", err, tt.err)
			}
			if tt.err != nil {
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Parse mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseKeepsNestedDuplicates: members named twice deeper than the
// _meta the gateway reads are the replica's to judge (a tool's arguments).
func TestParseKeepsNestedDuplicates(t *testing.T) {
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"x":1,"x":2}}}`
	m, err := Parse([]byte(body))
	if err != nil || m.Name != "a" {
		t.Fatalf("Parse = %+v, %v; want the call to a", m, err)
	}
}

func deep(n int) string {
	b := []byte(`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":`)
	for range n {
		b = append(b, '[')
	}
	for range n {
		b = append(b, ']')
	}
	return string(append(b, "}}"...))
}

func TestEraOf(t *testing.T) {
	call := &Message{Kind: KindRequest, Method: "tools/call"}
	call26 := &Message{Kind: KindRequest, Method: "tools/call", ProtocolVersion: "2026-07-28"}
	init26 := &Message{Kind: KindRequest, Method: "initialize", HasInitialize: true, ProtocolVersion: "2026-07-28"}
	tests := []struct {
		name            string
		session, header string
		msg             *Message
		want            Era
	}{
		{"session wins", "abc", "2026-07-28", call26, EraLegacy},
		{"header", "", "2026-07-28", call, EraStateless},
		{"later version header", "", "2027-01-01", call, EraStateless},
		{"meta", "", "", call26, EraStateless},
		{"initialize is legacy", "", "", init26, EraLegacy},
		{"old header", "", "2025-11-25", call, EraLegacy},
		{"nothing", "", "", call, EraLegacy},
		{"get without session", "", "", nil, EraLegacy},
		{"garbage header", "", "zzzz", call, EraLegacy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := EraOf(tt.session, tt.header, tt.msg); got != tt.want {
				t.Errorf("EraOf = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCheckHeaders(t *testing.T) {
	call := &Message{Kind: KindRequest, Method: "tools/call", Name: "echo"}
	list := &Message{Kind: KindRequest, Method: "tools/list"}
	tests := []struct {
		name, method, hname string
		msg                 *Message
		ok                  bool
	}{
		{"match", "tools/call", "echo", call, true},
		{"method mismatch", "tools/list", "echo", call, false},
		{"name mismatch", "tools/call", "sleep", call, false},
		{"missing name", "tools/call", "", call, false},
		{"missing method", "", "", list, false},
		{"no name needed", "tools/list", "", list, true},
		{"batch passes", "", "", &Message{Kind: KindRequest, Batch: true}, true},
		{"task id matches", "tasks/get", "t-1", &Message{Kind: KindRequest, Method: "tasks/get", Name: "t-1"}, true},
		{"task id mismatch", "tasks/get", "t-2", &Message{Kind: KindRequest, Method: "tasks/get", Name: "t-1"}, false},
		{"task id header optional", "tasks/get", "", &Message{Kind: KindRequest, Method: "tasks/get", Name: "t-1"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckHeaders(tt.method, tt.hname, tt.msg)
			if (err == nil) != tt.ok {
				t.Errorf("CheckHeaders = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestErrorResponseIsJSON(t *testing.T) {
	e := &Error{Status: 404, Code: CodeSessionNotFound, Message: `session "x" not found`}
	for _, id := range [][]byte{nil, []byte(`"q"`), []byte(`12`)} {
		var v struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(e.AppendResponse(nil, id), &v); err != nil {
			t.Fatalf("response for id %s is not JSON: %v", id, err)
		}
		if v.Error.Code != CodeSessionNotFound || v.Error.Message != e.Message || v.JSONRPC != "2.0" {
			t.Errorf("response = %+v", v)
		}
	}
}

func TestParseTaskResult(t *testing.T) {
	tests := []struct {
		body string
		id   string
		ttl  int64
		ok   bool
	}{
		{`{"jsonrpc":"2.0","id":3,"result":{"resultType":"task","taskId":"t-9","status":"working","ttlMs":60000}}`, "t-9", 60000, true},
		{`{"jsonrpc":"2.0","id":3,"result":{"taskId":"t-9","resultType":"task"}}`, "t-9", 0, true},
		{`{"jsonrpc":"2.0","id":3,"result":{"resultType":"complete","content":[]}}`, "", 0, false},
		{`{"jsonrpc":"2.0","id":3,"result":{"resultType":"task"}}`, "", 0, false},
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{"taskId":"x"}}`, "", 0, false},
		{`not json`, "", 0, false},
	}
	for _, tt := range tests {
		id, ttl, ok := ParseTaskResult([]byte(tt.body))
		if id != tt.id || ttl != tt.ttl || ok != tt.ok {
			t.Errorf("ParseTaskResult(%s) = %q, %d, %v; want %q, %d, %v", tt.body, id, ttl, ok, tt.id, tt.ttl, tt.ok)
		}
	}
}

func TestResponseFailed(t *testing.T) {
	for body, want := range map[string]bool{
		`{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`:                  false,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":false}}`:  false,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}}`:   true,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"boom"}}`: true,
		`garbage`: true,
	} {
		if got := ResponseFailed([]byte(body)); got != want {
			t.Errorf("ResponseFailed(%s) = %v, want %v", body, got, want)
		}
	}
}

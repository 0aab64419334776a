package stdio

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestToStatelessResults: an older child's answer gets what a 2026-07-28
// result has: resultType always, and on the results with SEP-2549 hints
// ttlMs and cacheScope (required there), stale at once and private; what
// the child did say is kept, and errors and progress pass as they are.
func TestToStatelessResults(t *testing.T) {
	for _, c := range []struct{ name, method, in, want string }{
		{"call", "tools/call", `{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`,
			`{"jsonrpc":"2.0","id":7,"result":{"content":[],"resultType":"complete"}}`},
		{"tools list", "tools/list", `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"tools":[],"resultType":"complete","ttlMs":0,"cacheScope":"private"}}`},
		{"read", "resources/read", `{"jsonrpc":"2.0","id":2,"result":{"contents":[]}}`,
			`{"jsonrpc":"2.0","id":2,"result":{"contents":[],"resultType":"complete","ttlMs":0,"cacheScope":"private"}}`},
		{"hints kept", "prompts/list", `{"jsonrpc":"2.0","id":3,"result":{"prompts":[],"ttlMs":60000,"cacheScope":"public"}}`,
			`{"jsonrpc":"2.0","id":3,"result":{"prompts":[],"resultType":"complete","ttlMs":60000,"cacheScope":"public"}}`},
		{"error", "tools/list", `{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"no"}}`,
			`{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"no"}}`},
		{"progress", "tools/call", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`,
			`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got, want any
			if err := json.Unmarshal(toStateless(nil, c.method, nil, []byte(c.in)), &got); err != nil {
				t.Fatal(err)
			}
			_ = json.Unmarshal([]byte(c.want), &want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestToStatelessDropsBroadcasts: a list change or resource update the
// child sends every session does not reach a 2026-07-28 request's answer;
// that era has them on subscriptions/listen alone.
func TestToStatelessDropsBroadcasts(t *testing.T) {
	for _, m := range []string{"notifications/tools/list_changed", "notifications/resources/updated"} {
		if got := toStateless(nil, "tools/call", nil, []byte(`{"jsonrpc":"2.0","method":"`+m+`","params":{}}`)); got != nil {
			t.Errorf("%s reached the answer: %s", m, got)
		}
	}
}

// TestToStatelessServerInfo: a result names the child in _meta, beside
// what the child put there.
func TestToStatelessServerInfo(t *testing.T) {
	for meta, want := range map[string]string{
		`{"k":1}`: `{"k":1,"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}`,
		// A child's null _meta is none: it once cost the answer (a nil map).
		`null`: `{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}`,
	} {
		got := toStateless(nil, "tools/call", json.RawMessage(`{"name":"s","version":"1"}`), []byte(`{"jsonrpc":"2.0","id":8,"result":{"content":[],"_meta":`+meta+`}}`))
		want := `{"jsonrpc":"2.0","id":8,"result":{"content":[],"resultType":"complete","_meta":` + want + `}}`
		var g, w any
		_ = json.Unmarshal(got, &g)
		_ = json.Unmarshal([]byte(want), &w)
		if diff := cmp.Diff(w, g); diff != "" {
			t.Errorf("_meta %s (-want +got):\n%s", meta, diff)
		}
	}
}

// TestCheckStateless: the refusals a 2026-07-28 server gives before it
// serves a request, made for a child that does not speak that version.
func TestCheckStateless(t *testing.T) {
	const good = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	supported := []string{"2026-07-28", "2025-11-25"}
	for _, c := range []struct {
		name, method, meta, header string
		status, code               int
		data                       string
	}{
		{"served", "tools/list", good, "2026-07-28", 0, 0, ""},
		{"no header", "tools/list", good, "", 400, -32020, ""},
		{"no _meta", "server/discover", ``, "2026-07-28", 400, -32602, ""},
		{"no version", "tools/list", `{"io.modelcontextprotocol/clientCapabilities":{}}`, "2026-07-28", 400, -32602, ""},
		{"header disagrees", "tools/list", good, "2026-08-01", 400, -32020, ""},
		{"unsupported", "server/discover", `{"io.modelcontextprotocol/protocolVersion":"v999.0.0","io.modelcontextprotocol/clientCapabilities":{}}`, "v999.0.0",
			400, -32022, `{"requested":"v999.0.0","supported":["2026-07-28","2025-11-25"]}`},
		{"no capabilities", "tools/list", `{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`, "2026-07-28", 400, -32602, ""},
		{"removed", "ping", good, "2026-07-28", 404, -32601, ""},
		{"version escaped", "tools/list", `{"io.modelcontextprotocol/protocolVersion":"2026\u002d07-28","io.modelcontextprotocol/clientCapabilities":{}}`, "2026-07-28", 0, 0, ""},
		{"capabilities not an object", "tools/list", `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}`, "2026-07-28", 400, -32602, ""},
		// A member named twice is no _meta at all: the child must not see
		// another version than the one checked here.
		{"version twice", "tools/list", `{"io.modelcontextprotocol/protocolVersion":"v1","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`, "2026-07-28", 400, -32602, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			params := `{}`
			if c.meta != "" {
				params = `{"_meta":` + c.meta + `}`
			}
			e := checkStateless(c.method, []byte(`{"jsonrpc":"2.0","id":1,"method":"`+c.method+`","params":`+params+`}`), c.header, supported)
			if c.status == 0 {
				if e != nil {
					t.Fatalf("refused: %+v", e)
				}
				return
			}
			if e == nil || e.Status != c.status || e.Code != c.code || string(e.Data) != c.data {
				t.Errorf("got %+v (data %s), want %d %d %s", e, e.Data, c.status, c.code, c.data)
			}
		})
	}
}

// TestStatelessStatus: a child's error answer, sent as JSON, gets the
// HTTP status 2026-07-28 gives it.
func TestStatelessStatus(t *testing.T) {
	for msg, want := range map[string]int{
		`{"jsonrpc":"2.0","id":1,"result":{}}`:                                        200,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"unknown method"}}`: 404,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}`:            400,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32021,"message":"sampling"}}`:       400,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"lost"}}`:           200,
		`{"jsonrpc":"2.0","id":1,"error":null}`:                                       200,
		`{"jsonrpc":"2.0","id":1,"error":{"code":"-32601","message":"a string"}}`:     200,
	} {
		if got := statelessStatus([]byte(msg)); got != want {
			t.Errorf("%s: %d, want %d", msg, got, want)
		}
	}
}

// TestListenAgreed: a listen on an older child is agreed to what the
// child's capabilities declare, and relays only that, tagged with its id.
func TestListenAgreed(t *testing.T) {
	init := []byte(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"prompts":{},"resources":{"subscribe":true}}}`)
	got := agreed(subscriptions{ToolsListChanged: true, PromptsListChanged: true, ResourcesListChanged: true, ResourceSubscriptions: []string{"file:///a"}}, init)
	want := subscriptions{ToolsListChanged: true, ResourceSubscriptions: []string{"file:///a"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("agreed (-want +got):\n%s", diff)
	}
	for _, c := range []struct {
		method, uri string
		want        bool
	}{
		{"notifications/tools/list_changed", "", true},
		{"notifications/prompts/list_changed", "", false},
		{"notifications/resources/updated", "file:///a", true},
		{"notifications/resources/updated", "file:///b", false},
		{"notifications/message", "", false},
	} {
		if got.wants(c.method, c.uri) != c.want {
			t.Errorf("wants(%s, %q) = %v", c.method, c.uri, !c.want)
		}
	}
	e, _ := parseEnvelope([]byte(`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///a"}}`))
	var params map[string]json.RawMessage
	_ = json.Unmarshal(e["params"], &params)
	out, err := tagSubscription(e, params, []byte(`7`))
	if err != nil || !strings.Contains(string(out), `"_meta":{"io.modelcontextprotocol/subscriptionId":7}`) || !strings.Contains(string(out), `"uri":"file:///a"`) {
		t.Errorf("tagged: %s, %v", out, err)
	}
}

// TestEraMetaOfNamesAsWritten: params._meta is read by its names as
// written, as the child reads them; encoding/json, which read it before,
// matched "Params" and "_META" to its fields as well.
func TestEraMetaOfNamesAsWritten(t *testing.T) {
	meta := `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	for body, want := range map[string]eraMeta{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":` + meta + `}}`:             {version: "2026-07-28", caps: true},
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","Params":{"_meta":` + meta + `}}`:             {},
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_META":` + meta + `}}`:             {},
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":` + meta + `},"params":{}}`: {},
		`not json`: {},
	} {
		if got := eraMetaOf([]byte(body)); got != want {
			t.Errorf("%s: %+v, want %+v", body, got, want)
		}
	}
}

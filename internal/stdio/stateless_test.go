package stdio

import (
	"encoding/json"
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
			if err := json.Unmarshal(toStateless(nil, c.method, []byte(c.in)), &got); err != nil {
				t.Fatal(err)
			}
			_ = json.Unmarshal([]byte(c.want), &want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

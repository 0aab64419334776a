package stdio

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// headerChild is a stdio server in sh whose tool t mirrors its argument
// region into a header named Region, until a call of rename makes it Area
// and says so with notifications/tools/list_changed. It writes "listed"
// to stderr at each tools/list.
const headerChild = `read l; echo '{"jsonrpc":"2.0","id":"mcpfleet-initialize","result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"sh","version":"1"}}}'
h=Region
while read l; do
	id=$(printf '%s\n' "$l" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
	case "$l" in
	*'"tools/list"'*) echo listed >&2
		echo '{"jsonrpc":"2.0","id":'"$id"',"result":{"tools":[{"name":"t","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"'"$h"'"}}}},{"name":"rename","inputSchema":{"type":"object"}}]}}';;
	*'"rename"'*) h=Area
		echo '{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}'
		echo '{"jsonrpc":"2.0","id":'"$id"',"result":{"content":[]}}';;
	*'"tools/call"'*) echo '{"jsonrpc":"2.0","id":'"$id"',"result":{"content":[{"type":"text","text":"ran"}]}}';;
	esac
done`

// TestBridgeChecksParamHeaders: a 2026-07-28 tools/call reaching an older
// child through its bridge is refused with 400 and -32020 when its
// Mcp-Param-* headers do not mirror the arguments the child's tool
// annotates, and served when they do; the bridge lists the child's tools
// once, and again after the child says they changed.
func TestBridgeChecksParamHeaders(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	c := startChild(t, "h", []string{"sh", "-c", headerChild}, nil)
	srv := httptest.NewServer(NewBridge(c, 0, nil, nil))
	t.Cleanup(srv.Close)
	call := func(tool, args string, headers map[string]string) (int, int) {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args +
			`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
		req, _ := http.NewRequest(http.MethodPost, srv.URL+mcpPath, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		req.Header.Set(headerProtocol, "2026-07-28")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m struct {
			Error *struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			t.Fatalf("%s: decoding the answer: %v", tool, err)
		}
		if m.Error == nil {
			return resp.StatusCode, 0
		}
		return resp.StatusCode, m.Error.Code
	}
	region := map[string]string{"Mcp-Param-Region": "us-west1"}
	for _, c := range []struct {
		name, tool, args  string
		headers           map[string]string
		wantStatus, wantC int
	}{
		{"mirrored", "t", `{"region":"us-west1"}`, region, 200, 0},
		{"base64", "t", `{"region":"us-west1"}`, map[string]string{"Mcp-Param-Region": "=?base64?dXMtd2VzdDE=?="}, 200, 0},
		{"missing", "t", `{"region":"us-west1"}`, nil, 400, -32020},
		{"mismatch", "t", `{"region":"us-west1"}`, map[string]string{"Mcp-Param-Region": "eu-west1"}, 400, -32020},
		{"bad base64", "t", `{"region":"us-west1"}`, map[string]string{"Mcp-Param-Region": "=?base64?dXMtd2VzdDE?="}, 400, -32020},
		{"tool without bindings", "rename", `{}`, nil, 200, 0},
		{"renamed: the old header", "t", `{"region":"us-west1"}`, region, 400, -32020},
		{"renamed: the new header", "t", `{"region":"us-west1"}`, map[string]string{"Mcp-Param-Area": "us-west1"}, 200, 0},
	} {
		if status, code := call(c.tool, c.args, c.headers); status != c.wantStatus || code != c.wantC {
			t.Errorf("%s: %d %d, want %d %d", c.name, status, code, c.wantStatus, c.wantC)
		}
	}
	listed := func() int {
		n := 0
		for _, l := range c.Info().Stderr {
			if l == "listed" {
				n++
			}
		}
		return n
	}
	deadline := time.Now().Add(2 * time.Second) // stderr is drained apart from stdout
	for listed() != 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := listed(); n != 2 {
		t.Errorf("the child listed its tools %d times; want 2 (once, and once after list_changed)", n)
	}
}

package stdio

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestToolBindings: the x-mcp-header annotations of a tools/list result,
// nested ones too, by tool; a tool without any is left out.
func TestToolBindings(t *testing.T) {
	got, err := toolBindings(json.RawMessage(`{"tools":[
		{"name":"plain","inputSchema":{"type":"object","properties":{"q":{"type":"string"}}}},
		{"name":"h","inputSchema":{"type":"object","properties":{
			"region":{"type":"string","x-mcp-header":"Region"},
			"where":{"type":"object","properties":{"zone":{"type":"string","x-mcp-header":"Zone"}}}}}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, bs := range got {
		slices.SortFunc(bs, func(a, b paramBinding) int { return strings.Compare(a.Header, b.Header) })
	}
	want := map[string][]paramBinding{"h": {{Path: []string{"region"}, Header: "Region"}, {Path: []string{"where", "zone"}, Header: "Zone"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := toolBindings(json.RawMessage(`{"tools":{}}`)); err == nil {
		t.Error("a result whose tools is no list decodes")
	}
}

// TestCheckParamHeaders: the Mcp-Param-* checks of SEP-2243's test-case
// table, as the Go SDK's HTTP server makes them.
func TestCheckParamHeaders(t *testing.T) {
	bindings := []paramBinding{
		{Path: []string{"region"}, Header: "Region"},
		{Path: []string{"n"}, Header: "N"},
		{Path: []string{"on"}, Header: "On"},
		{Path: []string{"where", "zone"}, Header: "Zone"},
	}
	for _, c := range []struct {
		name, args string
		headers    map[string]string
		reject     string // "" when served; else a part of the error
	}{
		{"all mirrored", `{"region":"us-west1","n":42,"on":true,"where":{"zone":"b"}}`,
			map[string]string{"Region": "us-west1", "N": "42", "On": "true", "Zone": "b"}, ""},
		{"none given, none needed", `{}`, nil, ""},
		{"null needs none", `{"region":null}`, nil, ""},
		{"base64", `{"region":"日本"}`, map[string]string{"Region": "=?base64?5pel5pys?="}, ""},
		{"literal without prefix", `{"region":"SGVsbG8="}`, map[string]string{"Region": "SGVsbG8="}, ""},
		{"literal without suffix", `{"region":"=?base64?SGVsbG8="}`, map[string]string{"Region": "=?base64?SGVsbG8="}, ""},
		{"integer spelled otherwise", `{"n":100}`, map[string]string{"N": "1e2"}, ""},
		{"missing", `{"region":"us-west1"}`, nil, "missing Mcp-Param-Region"},
		{"nested missing", `{"where":{"zone":"b"}}`, nil, "missing Mcp-Param-Zone"},
		{"mismatch", `{"region":"us-west1"}`, map[string]string{"Region": "eu-west1"}, "Mcp-Param-Region header does not match"},
		{"for an absent argument", `{}`, map[string]string{"Region": "us-west1"}, "unexpected Mcp-Param-Region"},
		{"bad padding", `{"region":"Hello"}`, map[string]string{"Region": "=?base64?SGVsbG8?="}, "invalid Base64"},
		{"bad characters", `{"region":"Hello"}`, map[string]string{"Region": "=?base64?SGVs!!!bG8=?="}, "invalid Base64"},
		{"not a primitive", `{"region":{"a":1}}`, map[string]string{"Region": "x"}, "not a string, integer or boolean"},
		{"fraction", `{"n":1.5}`, map[string]string{"N": "1.5"}, "not a string, integer or boolean"},
		{"boolean case", `{"on":true}`, map[string]string{"On": "True"}, "does not match"},
		{"string is no number", `{"region":"100"}`, map[string]string{"Region": "1e2"}, "does not match"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range c.headers {
				h.Set(paramHeaderPrefix+k, v)
			}
			err := checkParamHeaders(h, json.RawMessage(`{"name":"t","arguments":`+c.args+`}`), bindings)
			switch {
			case c.reject == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.reject != "" && (err == nil || !strings.Contains(err.Error(), c.reject)):
				t.Errorf("got %v, want an error with %q", err, c.reject)
			}
			if err != nil {
				for _, v := range c.headers {
					if strings.Contains(err.Error(), v) {
						t.Errorf("the error %q echoes the header's value %q", err, v)
					}
				}
			}
		})
	}
}

// TestStripMetaKeepsCapabilities: an older child gets the request without
// the era's version and client info, but with the client's capabilities
// (so that it can refuse what needs one the client did not declare), and
// with the members of _meta that are not the era's.
func TestStripMetaKeepsCapabilities(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c"},` +
		`"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"progressToken":3}}}`
	out, err := stripMeta([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var got, want any
	_ = json.Unmarshal(out, &got)
	_ = json.Unmarshal([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","_meta":{`+
		`"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"progressToken":3}}}`), &want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

package stdio

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/cache"
)

// The translations of an answer and a request between eras as they were
// before they were made in place: every message decoded into maps and
// encoded again. FuzzStatelessInPlace holds the in-place ones to them.

// refToStateless shapes the answer to a request of method as 2026-07-28 wants
// it, info the child's serverInfo; a server request is refused.
func refToStateless(cs *Session, method string, info json.RawMessage, msg []byte) []byte {
	e, err := parseEnvelope(msg)
	if err != nil {
		return msg
	}
	if e.isRequest() {
		_ = cs.Send(appendError(nil, e["id"], -32601, "the client speaks "+statelessVersion+", which has no server-to-client requests"))
		return nil
	}
	res := e["result"]
	if len(res) == 0 || res[0] != '{' {
		return msg
	}
	var o envelope
	if json.Unmarshal(res, &o) != nil || !refStatelessResult(method, info, o) {
		return msg
	}
	e["result"], _ = json.Marshal(o)
	out, err := json.Marshal(e)
	if err != nil {
		return msg
	}
	return out
}

// refStatelessResult adds to result, the child's answer to a request of
// method, the members a 2026-07-28 result has and an older one lacks, and
// reports whether it added any: resultType, the server's identity in
// _meta (io.modelcontextprotocol/serverInfo: info, when known), and on the
// results that carry cache hints (SEP-2549: the lists and resources/read)
// ttlMs and cacheScope, which are required there. An older child says
// nothing of how long its answer stays true, so the hints say what the
// SDKs default to: stale at once (0) and for this caller only (private).
func refStatelessResult(method string, info json.RawMessage, result envelope) bool {
	added := false
	add := func(k, v string) {
		if result[k] == nil {
			result[k] = json.RawMessage(v)
			added = true
		}
	}
	add("resultType", `"complete"`)
	if cache.Hinted(method) {
		add("ttlMs", "0")
		add("cacheScope", `"private"`)
	}
	if len(info) > 0 {
		var meta envelope
		if json.Unmarshal(result["_meta"], &meta) != nil || meta == nil {
			meta = envelope{} // none, or not an object (null decodes to a nil map)
		}
		if meta[metaServerInfo] == nil {
			meta[metaServerInfo] = info
			result["_meta"], _ = json.Marshal(meta)
			added = true
		}
	}
	return added
}

// refStripMeta removes the per-request members of params._meta that the
// 2026-07-28 era adds (io.modelcontextprotocol/...: version, client
// capabilities and info), which an older child does not know.
func refStripMeta(body []byte) ([]byte, error) {
	e, err := parseEnvelope(body)
	if err != nil || len(e["params"]) == 0 {
		return body, err
	}
	var p envelope
	if json.Unmarshal(e["params"], &p) != nil || len(p["_meta"]) == 0 {
		return body, nil
	}
	var meta envelope
	if json.Unmarshal(p["_meta"], &meta) != nil {
		return body, nil
	}
	for k := range meta {
		if strings.HasPrefix(k, "io.modelcontextprotocol/") && k != metaClientCapabilities {
			delete(meta, k)
		}
	}
	if len(meta) == 0 {
		delete(p, "_meta")
	} else {
		p["_meta"], _ = json.Marshal(meta)
	}
	e["params"], _ = json.Marshal(p)
	return json.Marshal(e)
}

// FuzzStatelessInPlace holds the translations between eras, which add and
// remove members in place, to the ones that decoded the message into maps
// and encoded it again: the same message once both are spelt canonically,
// for an answer of a hinted method and of another, with and without the
// child's serverInfo, and for a request; a message that names a member
// twice is not translated (decoding kept its last spelling).
func FuzzStatelessInPlace(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"<a & b>"}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[],"ttlMs":5,"_meta":{"k":1}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","_meta":null}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"_meta":{"io.modelcontextprotocol/serverInfo":{}}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"_meta":{}}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"no"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":1}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"cursor":"c"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"k":"v"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"\u005fmeta":{"io.modelcontextprotocol/x":1}}}`,
		` {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info"}} `,
	} {
		f.Add([]byte(s))
	}
	info := json.RawMessage(`{"name":"child","version":"1"}`)
	f.Fuzz(func(t *testing.T, msg []byte) {
		fr, err := parseFrame(msg)
		e, refErr := parseEnvelope(msg)
		request := err == nil && fr.isRequest()
		if request != (refErr == nil && e.isRequest()) {
			if !namesTwice(msg) {
				t.Fatalf("%s: a request %v, by decoding %v", msg, request, !request)
			}
			return
		}
		if request {
			// As an answer it would go back to the child; as a request it
			// is stripped on the way in.
			got, err := stripMeta(msg)
			want, refErr := refStripMeta(msg)
			sameTranslation(t, msg, "stripMeta", got, want, err, refErr)
			return
		}
		for _, method := range []string{"tools/call", "tools/list"} {
			for _, info := range []json.RawMessage{nil, info} {
				got, want := toStateless(nil, method, info, msg), refToStateless(nil, method, info, msg)
				sameTranslation(t, msg, method, got, want, nil, nil)
			}
		}
	})
}

func sameTranslation(t *testing.T, msg []byte, what string, got, want []byte, err, refErr error) {
	t.Helper()
	if (err != nil) != (refErr != nil) && !namesTwice(msg) {
		t.Fatalf("%s of %s: error %v, by decoding %v", what, msg, err, refErr)
	}
	if err != nil || refErr != nil || namesTwice(msg) {
		return
	}
	if string(got) == string(msg) && string(want) == string(msg) {
		return // untouched by both, JSON or not
	}
	if g, w := canon(t, got), canon(t, want); g != w {
		t.Fatalf("%s of %s:\n in place %s\n decoding %s", what, msg, g, w)
	}
}

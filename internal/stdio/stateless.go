package stdio

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/cache"
	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
)

// statelessVersion is the first version without sessions (SEP-2575).
const statelessVersion = "2026-07-28"

// serveStateless serves a 2026-07-28 request on a child that speaks an
// older version: server/discover from the child's initialize result;
// subscriptions/listen from a session of its own (serveListen); any
// other request on a session of its own for this request alone, its
// per-request _meta members stripped on the way in and resultType added
// on the way out. A server request during it cannot be carried (the
// 2026-07-28 era asks for input in a result, not a request) and is
// answered with an error; a dropped answer is the request's cancel.
func (b *Bridge) serveStateless(w http.ResponseWriter, r *http.Request, body []byte, m *mcpmsg.Message) {
	if m.Kind != mcpmsg.KindRequest {
		w.WriteHeader(http.StatusAccepted) // nothing to notify without a session
		return
	}
	if e := checkStateless(m.Method, body, r.Header.Get(headerProtocol), []string{statelessVersion, b.childVersion()}); e != nil {
		writeError(w, m.ID, e)
		return
	}
	if m.Method == "server/discover" {
		b.discover(w, m.ID)
		return
	}
	if m.Method == "subscriptions/listen" {
		b.serveListen(w, r, body, m.ID)
		return
	}
	cs, err := b.child.Open()
	if err != nil {
		writeError(w, m.ID, &mcpmsg.Error{Status: http.StatusServiceUnavailable, Code: mcpmsg.CodeInternalError, Message: err.Error(), RetryAfter: time.Second})
		return
	}
	defer cs.Close()
	out, err := stripMeta(body)
	if err == nil {
		err = cs.Send(out)
	}
	if err != nil {
		writeError(w, m.ID, sendError(err))
		return
	}
	go func() { // a dropped answer cancels the request (2026-07-28)
		<-r.Context().Done()
		_ = cs.Send([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + string(m.ID) + `}}`))
	}()
	method, info := m.Method, b.serverInfo()
	relay(w, r, cs.Messages(), m.ID, b.child.opts.Name, relayOpts{
		fix:    func(msg []byte) []byte { return toStateless(cs, method, info, msg) },
		status: statelessStatus,
	})
}

// envelope is a JSON-RPC message, its members raw: for the translations
// between eras, which rebuild a message's members (the mux rewrites in
// place, frame.go).
type envelope map[string]json.RawMessage

func parseEnvelope(msg []byte) (envelope, error) {
	msg = bytes.TrimSpace(msg)
	if len(msg) > 0 && msg[0] == '[' {
		return nil, ErrBatch
	}
	var m envelope
	if err := json.Unmarshal(msg, &m); err != nil || m == nil {
		return nil, errNotObject
	}
	return m, nil
}

func (m envelope) method() string {
	var s string
	_ = json.Unmarshal(m["method"], &s)
	return s
}

func (m envelope) isRequest() bool { return m["method"] != nil && hasID(m["id"]) }

// toStateless shapes the answer to a request of method as 2026-07-28 wants
// it, info the child's serverInfo; a server request is refused.
func toStateless(cs *Session, method string, info json.RawMessage, msg []byte) []byte {
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
	if json.Unmarshal(res, &o) != nil || !statelessResult(method, info, o) {
		return msg
	}
	e["result"], _ = json.Marshal(o)
	out, err := json.Marshal(e)
	if err != nil {
		return msg
	}
	return out
}

// statelessResult adds to result, the child's answer to a request of
// method, the members a 2026-07-28 result has and an older one lacks, and
// reports whether it added any: resultType, the server's identity in
// _meta (io.modelcontextprotocol/serverInfo: info, when known), and on the
// results that carry cache hints (SEP-2549: the lists and resources/read)
// ttlMs and cacheScope, which are required there. An older child says
// nothing of how long its answer stays true, so the hints say what the
// SDKs default to: stale at once (0) and for this caller only (private).
func statelessResult(method string, info json.RawMessage, result envelope) bool {
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

// stripMeta removes the per-request members of params._meta that the
// 2026-07-28 era adds (io.modelcontextprotocol/...: version, client
// capabilities and info), which an older child does not know.
func stripMeta(body []byte) ([]byte, error) {
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
		if strings.HasPrefix(k, "io.modelcontextprotocol/") {
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

// discover answers server/discover (SEP-2575) from the child's initialize
// result.
func (b *Bridge) discover(w http.ResponseWriter, id []byte) {
	var init struct {
		Version      string          `json:"protocolVersion"`
		Capabilities json.RawMessage `json:"capabilities"`
		ServerInfo   json.RawMessage `json:"serverInfo"`
		Instructions string          `json:"instructions,omitempty"`
	}
	result, _ := b.child.initialized()
	if json.Unmarshal(result, &init) != nil || init.Version == "" {
		writeError(w, id, &mcpmsg.Error{Status: http.StatusServiceUnavailable, Code: mcpmsg.CodeInternalError, Message: ErrNotReady.Error(), RetryAfter: time.Second})
		return
	}
	res := map[string]any{
		"resultType": "complete", "supportedVersions": []string{statelessVersion, init.Version},
		"capabilities": init.Capabilities, "serverInfo": init.ServerInfo,
		"ttlMs": 0, "cacheScope": "private", "_meta": map[string]json.RawMessage{metaServerInfo: init.ServerInfo},
	}
	if init.Instructions != "" {
		res["instructions"] = init.Instructions
	}
	out, _ := json.Marshal(res)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(appendResult(nil, id, string(out)))
}

// serverInfo returns the child's serverInfo from its initialize result;
// nil before it has one.
func (b *Bridge) serverInfo() json.RawMessage {
	_, facts := b.child.initialized()
	return facts.ServerInfo
}

func (b *Bridge) childVersion() string {
	_, facts := b.child.initialized()
	return facts.Version
}

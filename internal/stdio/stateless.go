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
// older version, once checked as the era's servers check it
// (checkStateless, and for a tools/call its Mcp-Param-* headers:
// checkParams): server/discover from the child's initialize result;
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
	tc := b.twin.serving()
	if startsTwin(m.Method) {
		tc = b.twin.native(r.Context())
	}
	if tc != nil {
		b.serveNative(w, r, body, m, tc)
		return
	}
	if b.refuseStateless(w, r, body, m, []string{statelessVersion, b.childVersion()}) {
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
	method, info := m.Method, b.serverInfo()
	answered := relay(w, r, cs.Messages(), m.ID, b.child.opts.Name, relayOpts{
		fix:    func(msg []byte) []byte { return toStateless(cs, method, info, msg) },
		status: statelessStatus,
	})
	if !answered {
		cancelCall(cs, m.ID)
	}
}

// cancelCall tells the child that the call id of cs is cancelled (MCP
// 2025-11-25, "Cancellation"): a dropped 2026-07-28 answer is the
// request's cancel. It is sent before the session closes, for the mux
// knows the call by its id only until then.
func cancelCall(cs *Session, id []byte) {
	_ = cs.Send([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + string(id) + `}}`))
}

// startsTwin reports whether a 2026-07-28 request of method starts the
// replica's stateless twin when it has not started yet: any but
// server/discover and the lists, which the gateway itself sends every
// replica (its health checks, its tool agreement), and which the child
// answers alike by translation; so a fleet of older clients runs no
// second process.
func startsTwin(method string) bool {
	return method != "server/discover" && !strings.HasSuffix(method, "/list")
}

// refuseStateless answers a 2026-07-28 request that a server of the era,
// supporting versions, would refuse, and reports whether it did: the
// era's checks (checkStateless) and, for a tools/call, its Mcp-Param-*
// headers against the tool (checkParams).
func (b *Bridge) refuseStateless(w http.ResponseWriter, r *http.Request, body []byte, m *mcpmsg.Message, versions []string) bool {
	e := checkStateless(m.Method, body, r.Header.Get(headerProtocol), versions)
	if e == nil && m.Method == "tools/call" {
		e = b.checkParams(r, body, m.Name)
	}
	if e != nil {
		writeError(w, m.ID, e)
		return true
	}
	return false
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
// it, info the child's serverInfo; a server request is refused, and a
// notification the child sends every session (a list change, a resource
// update) is dropped.
func toStateless(cs *Session, method string, info json.RawMessage, msg []byte) []byte {
	f, err := parseFrame(msg)
	if err != nil {
		return msg
	}
	if refuseOrDrop(cs, &f) {
		return nil
	}
	if !f.result.present() || f.b[f.result.start] != '{' {
		return f.b
	}
	if out := statelessResult(f.b, f.result, method, info); out != nil {
		return out
	}
	return f.b
}

// statelessResult returns msg with the members a 2026-07-28 result has and
// an older one lacks added to its result, the child's answer to a request
// of method, at res; nil when it lacks none. They are: resultType, the
// server's identity in _meta (io.modelcontextprotocol/serverInfo: info,
// when known), and on the results that carry cache hints (SEP-2549: the
// lists and resources/read) ttlMs and cacheScope, which are required
// there. An older child says nothing of how long its answer stays true,
// so the hints say what the SDKs default to: stale at once (0) and for
// this caller only (private). The rest of msg goes on as it came.
func statelessResult(msg []byte, res span, method string, info json.RawMessage) []byte {
	var has struct {
		resultType, ttl, scope bool
		meta                   span
		members                int
	}
	err := mcpmsg.Members(msg[res.start:res.end], func(k []byte, s, e int) error {
		has.members++
		switch string(k) {
		case "resultType":
			has.resultType = true
		case "ttlMs":
			has.ttl = true
		case "cacheScope":
			has.scope = true
		case "_meta":
			has.meta = span{res.start + s, res.start + e}
		}
		return nil
	})
	if err != nil {
		return nil
	}
	var add []byte
	member := func(kv ...string) {
		if len(add) > 0 {
			add = append(add, ',')
		}
		for _, s := range kv {
			add = append(add, s...)
		}
	}
	if !has.resultType {
		member(`"resultType":"complete"`)
	}
	if cache.Hinted(method) && !has.ttl {
		member(`"ttlMs":0`)
	}
	if cache.Hinted(method) && !has.scope {
		member(`"cacheScope":"private"`)
	}
	var metaEdit edit
	if len(info) > 0 {
		named := `"` + metaServerInfo + `":` + string(info)
		switch {
		case !has.meta.present():
			member(`"_meta":{`, named, `}`)
		case msg[has.meta.start] != '{': // null, or not an object: none
			metaEdit = edit{has.meta, []byte("{" + named + "}")}
		default:
			var ok bool
			if metaEdit, ok = addMember(msg, has.meta, metaServerInfo, named); !ok {
				return nil
			}
		}
	}
	if len(add) == 0 && !metaEdit.at.present() {
		return nil
	}
	var addEdit edit
	if len(add) > 0 {
		if has.members > 0 {
			add = append(add, ',')
		}
		addEdit = edit{span{res.start + 1, res.start + 1}, add}
	}
	return splice(msg, addEdit, metaEdit)
}

// addMember returns the edit that adds member, "key":value, to the
// object at obj in msg when it has no member key; none when it has. It
// is not ok when the object names a member twice.
func addMember(msg []byte, obj span, key, member string) (edit, bool) {
	n, found := 0, false
	err := mcpmsg.Members(msg[obj.start:obj.end], func(k []byte, _, _ int) error {
		n++
		found = found || string(k) == key
		return nil
	})
	if err != nil || found {
		return edit{}, err == nil
	}
	if n > 0 {
		member += ","
	}
	return edit{span{obj.start + 1, obj.start + 1}, []byte(member)}, true
}

// eraMetaPrefix begins the names of the per-request members of
// params._meta that the 2026-07-28 era adds (SEP-2575).
const eraMetaPrefix = "io.modelcontextprotocol/"

// eraMember reports a member of params._meta that stripMeta removes.
func eraMember(k []byte) bool {
	return strings.HasPrefix(string(k), eraMetaPrefix) && string(k) != metaClientCapabilities
}

// stripMeta removes the per-request members of params._meta that the
// 2026-07-28 era adds (io.modelcontextprotocol/...: version, client info),
// which an older child does not know, but the client's capabilities: the
// child's session was initialized with the gateway's, and a server that
// reads this request's own (the Go SDK's ClientCapabilities does, in any
// version) then refuses a call that needs one the client did not declare
// (-32021, SEP-2575), where it would rely on the gateway's. _meta goes
// when nothing else is in it (or nothing was); a body without them goes
// on as it came.
func stripMeta(body []byte) ([]byte, error) {
	f, err := parseFrame(body)
	if err != nil {
		return body, err
	}
	meta, err := f.param("_meta")
	if err != nil || !meta.present() || f.b[meta.start] != '{' {
		return body, err
	}
	strip, members := false, 0
	err = mcpmsg.Members(f.raw(meta), func(k []byte, _, _ int) error {
		strip = strip || eraMember(k)
		members++
		return nil
	})
	if err != nil || !strip && members > 0 {
		return body, err
	}
	return splice(f.b, edit{f.params, paramsWithoutEraMeta(f.raw(f.params))}, edit{}), nil
}

// paramsWithoutEraMeta returns params, an object whose members were read
// once already, without the era's _meta members; its other members as
// they came, their names spelt as encoding/json spells them.
func paramsWithoutEraMeta(params []byte) []byte {
	out := append(make([]byte, 0, len(params)), '{')
	_ = mcpmsg.Members(params, func(k []byte, s, e int) error {
		v := params[s:e]
		if string(k) == "_meta" {
			if v = keptMeta(v); v == nil {
				return nil
			}
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(mcpmsg.AppendString(out, string(k)), ':')
		out = append(out, v...)
		return nil
	})
	return append(out, '}')
}

// keptMeta returns the members of meta that are not the era's, as an
// object; nil when none is left.
func keptMeta(meta []byte) []byte {
	out := []byte{'{'}
	_ = mcpmsg.Members(meta, func(k []byte, s, e int) error {
		if !eraMember(k) {
			if len(out) > 1 {
				out = append(out, ',')
			}
			out = append(mcpmsg.AppendString(out, string(k)), ':')
			out = append(out, meta[s:e]...)
		}
		return nil
	})
	if len(out) == 1 {
		return nil
	}
	return append(out, '}')
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

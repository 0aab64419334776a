package stdio

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// SessionID names a client session on one child; the mux gives it no
// meaning.
type SessionID uint64

// Errors of the mux, for messages a client sends.
var (
	// ErrBatch: a JSON-RPC batch; MCP 2025-06-18 removed them, and the
	// gateway splits or refuses them before a child sees one.
	ErrBatch = errors.New("a JSON-RPC batch cannot go to a stdio child")
	// ErrNotYours: a response to a server request that was not sent to
	// this session.
	ErrNotYours = errors.New("a response to no request of this session")
)

// A Mux multiplexes many client sessions on one child, as the child's one
// MCP client (MCP 2025-11-25, "Base Protocol"): each request's id is
// rewritten on the way in to one the mux alone hands out, and its
// progressToken to that same number, and both are restored on the way
// out, so that two sessions using the same id (a client that sends id 1
// every time) never get each other's answers. A Mux is pure: no I/O, not
// safe for concurrent use (its owner holds a lock around it).
type Mux struct {
	next     int64
	pending  map[int64]call     // upstream id -> the call it stands for
	inflight map[SessionID]int  // session -> its calls pending
	serverRq map[string]serverQ // child's request id (idKey) -> where it went
	subs     subs               // resource subscriptions (subscribe.go)
}

// call is a client request in flight on the child.
type call struct {
	session SessionID
	id      json.RawMessage // the client's own id
	token   json.RawMessage // the client's own progressToken, if it gave one
	sub     string          // the URI of a resources/subscribe sent on; "" if none
}

// serverQ is a server-to-client request routed to a session.
type serverQ struct {
	session SessionID
}

// Pending is a request in flight when the child went away.
type Pending struct {
	Session SessionID
	ID      json.RawMessage // the client's own id
}

// Step is what becomes of a message a session sends.
type Step struct {
	// Child is the message as the child gets it; nil: it does not go on.
	Child []byte
	// Answer, when not nil, is the mux's own answer to the session (a
	// resources/subscribe of a URI the child is subscribed to already).
	Answer []byte
}

// Route says where a message from the child goes.
type Route struct {
	// To is the one session the message goes to, when Broadcast is false,
	// Sessions is nil and Msg is not nil.
	To SessionID
	// Sessions, when not nil, are the sessions Msg goes to (those
	// subscribed to an updated resource).
	Sessions []SessionID
	// Broadcast: Msg goes to every session on the child.
	Broadcast bool
	// Msg is the message to deliver, ids restored; nil: none.
	Msg []byte
	// Reply, when not nil, is written back to the child: the mux's own
	// answer to a server request no session can take.
	Reply []byte
	// ToolsChanged: Msg is the child's notifications/tools/list_changed.
	ToolsChanged bool
}

// NewMux returns an empty Mux.
func NewMux() *Mux {
	return &Mux{pending: map[int64]call{}, inflight: map[SessionID]int{}, serverRq: map[string]serverQ{}, subs: subs{}}
}

// envelope is a JSON-RPC message, its members raw.
type envelope map[string]json.RawMessage

func parseEnvelope(msg []byte) (envelope, error) {
	msg = bytes.TrimSpace(msg)
	if len(msg) > 0 && msg[0] == '[' {
		return nil, ErrBatch
	}
	var m envelope
	if err := json.Unmarshal(msg, &m); err != nil || m == nil {
		return nil, fmt.Errorf("decoding message: not a JSON-RPC object")
	}
	return m, nil
}

func (m envelope) method() string {
	var s string
	_ = json.Unmarshal(m["method"], &s)
	return s
}

func (m envelope) isRequest() bool { return m["method"] != nil && hasID(m["id"]) }

func hasID(id json.RawMessage) bool { return len(id) > 0 && string(id) != "null" }

// FromClient takes a message session s sends to the child and returns it
// as the child gets it; Child is nil when it does not go on (the client's
// notifications/initialized: the gateway sent the child its own; a
// subscription the child holds already, answered in Answer). A request is
// followed until its response, or until Lost or Forget.
func (x *Mux) FromClient(s SessionID, msg []byte) (Step, error) {
	m, err := parseEnvelope(msg)
	if err != nil {
		return Step{}, err
	}
	switch {
	case m.isRequest():
		answer, uri := x.subscription(s, m)
		if answer != nil {
			return Step{Answer: answer}, nil
		}
		out, err := x.request(s, m, uri)
		return Step{Child: out}, err
	case m["method"] != nil:
		out, err := x.notification(s, m)
		return Step{Child: out}, err
	case hasID(m["id"]):
		k := idKey(m["id"])
		q, ok := x.serverRq[k]
		if !ok || q.session != s {
			return Step{}, ErrNotYours
		}
		delete(x.serverRq, k)
		return Step{Child: msg}, nil
	}
	return Step{}, errors.New("decoding message: neither request, notification nor response")
}

// request rewrites a request's id and progressToken; sub is the URI of a
// resources/subscribe, "" for any other request.
func (x *Mux) request(s SessionID, m envelope, sub string) ([]byte, error) {
	x.next++
	up := x.next
	c := call{session: s, id: m["id"], sub: sub}
	if p := m["params"]; len(p) > 0 && p[0] == '{' {
		params, token, err := swapToken(p, "progressToken", json.RawMessage(strconv.FormatInt(up, 10)))
		if err != nil {
			return nil, err
		}
		m["params"], c.token = params, token
	}
	m["id"] = json.RawMessage(strconv.FormatInt(up, 10))
	out, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	x.pending[up] = c
	x.inflight[s]++
	return out, nil
}

func (x *Mux) notification(s SessionID, m envelope) ([]byte, error) {
	switch m.method() {
	case "notifications/initialized":
		return nil, nil
	case "notifications/cancelled":
		// Its requestId is the client's; the child knows the request by
		// the mux's id. A cancel of no call of this session goes nowhere.
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		if err := json.Unmarshal(m["params"], &p); err != nil {
			return nil, nil
		}
		up, ok := x.find(s, p.RequestID)
		if !ok {
			return nil, nil
		}
		params, _, err := swapMember(m["params"], "requestId", json.RawMessage(strconv.FormatInt(up, 10)))
		if err != nil {
			return nil, err
		}
		m["params"] = params
	}
	return json.Marshal(m)
}

// find returns the mux's id of session s's call id.
func (x *Mux) find(s SessionID, id json.RawMessage) (int64, bool) {
	k := idKey(id)
	for up, c := range x.pending {
		if c.session == s && idKey(c.id) == k {
			return up, true
		}
	}
	return 0, false
}

// FromChild routes a message the child wrote. The route's Msg and Reply
// never share msg's memory: the caller may reuse it (the child's line
// reader does, for its next line), while Msg waits in a session's queue.
func (x *Mux) FromChild(msg []byte) (Route, error) {
	m, err := parseEnvelope(msg)
	if err != nil {
		return Route{}, err
	}
	switch {
	case m.isRequest():
		return x.serverRequest(m, msg)
	case m["method"] != nil:
		return x.childNotification(m, msg)
	}
	up, err := strconv.ParseInt(string(m["id"]), 10, 64)
	c, ok := x.pending[up]
	if err != nil || !ok {
		return Route{}, nil // an answer to nobody (a forgotten session's): dropped
	}
	x.done(up, c)
	if c.sub != "" && m["error"] != nil {
		x.refused(c)
	}
	m["id"] = c.id
	out, err := json.Marshal(m)
	return Route{To: c.session, Msg: out}, err
}

func (x *Mux) done(up int64, c call) {
	delete(x.pending, up)
	if x.inflight[c.session]--; x.inflight[c.session] <= 0 {
		delete(x.inflight, c.session)
	}
}

// serverRequest routes a server-to-client request (sampling, elicitation,
// roots; MCP 2025-11-25, "Client Features"): to the one session with a
// call in flight, which is the call the request serves; when none or
// several are, nobody can say whose it is, and the child gets an error.
// A ping the mux answers itself.
func (x *Mux) serverRequest(m envelope, msg []byte) (Route, error) {
	id := m["id"]
	if m.method() == "ping" {
		return Route{Reply: appendResult(nil, id, "{}")}, nil
	}
	var only SessionID
	n := 0
	for s := range x.inflight {
		only = s
		n++
	}
	if n != 1 {
		why := "no client session has a call in flight on this server"
		if n > 1 {
			why = fmt.Sprintf("%d client sessions have calls in flight on this server, and the gateway cannot tell whose request this is", n)
		}
		return Route{Reply: appendError(nil, id, -32603, why)}, nil
	}
	x.serverRq[idKey(id)] = serverQ{session: only}
	return Route{To: only, Msg: bytes.Clone(msg)}, nil
}

// childNotification routes a notification: progress to the call whose
// token it names (restored), list_changed to every session, the
// cancellation of a server request to its session, anything else to the
// one session with a call in flight, or to every session.
func (x *Mux) childNotification(m envelope, msg []byte) (Route, error) {
	method := m.method()
	switch {
	case method == "notifications/progress":
		var p struct {
			Token json.RawMessage `json:"progressToken"`
		}
		_ = json.Unmarshal(m["params"], &p)
		up, err := strconv.ParseInt(string(p.Token), 10, 64)
		c, ok := x.pending[up]
		if err != nil || !ok || c.token == nil {
			return Route{}, nil
		}
		params, _, err := swapMember(m["params"], "progressToken", c.token)
		if err != nil {
			return Route{}, err
		}
		m["params"] = params
		out, err := json.Marshal(m)
		return Route{To: c.session, Msg: out}, err
	case strings.HasSuffix(method, "/list_changed"):
		return Route{Broadcast: true, Msg: bytes.Clone(msg), ToolsChanged: method == "notifications/tools/list_changed"}, nil
	case method == "notifications/resources/updated":
		to := x.updated(m)
		if len(to) == 0 {
			return Route{}, nil // nobody subscribed (any more)
		}
		return Route{Sessions: to, Msg: bytes.Clone(msg)}, nil
	case method == "notifications/cancelled":
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		_ = json.Unmarshal(m["params"], &p)
		if q, ok := x.serverRq[idKey(p.RequestID)]; ok {
			delete(x.serverRq, idKey(p.RequestID))
			return Route{To: q.session, Msg: bytes.Clone(msg)}, nil
		}
		return Route{}, nil
	}
	if len(x.inflight) == 1 {
		for s := range x.inflight {
			return Route{To: s, Msg: bytes.Clone(msg)}, nil
		}
	}
	return Route{Broadcast: true, Msg: bytes.Clone(msg)}, nil
}

// Lost returns every call in flight and forgets them all: the child went
// away, and each is answered with the replica_lost error.
func (x *Mux) Lost() []Pending {
	out := make([]Pending, 0, len(x.pending))
	for _, c := range x.pending {
		out = append(out, Pending{Session: c.session, ID: c.id})
	}
	clear(x.pending)
	clear(x.inflight)
	clear(x.serverRq)
	clear(x.subs)
	return out
}

// Forget ends session s: its calls are no longer followed (their answers
// are dropped), the server requests routed to it are answered with an
// error, and the URIs it alone was subscribed to are unsubscribed: those
// messages are returned, for the child.
func (x *Mux) Forget(s SessionID) [][]byte {
	for up, c := range x.pending {
		if c.session == s {
			x.done(up, c)
		}
	}
	var replies [][]byte
	for k, q := range x.serverRq {
		if q.session == s {
			delete(x.serverRq, k)
			replies = append(replies, appendError(nil, json.RawMessage(k), -32603, "the client session ended"))
		}
	}
	return append(replies, x.unsubscribeAll(s)...)
}

// InFlight returns how many calls session s has pending on the child.
func (x *Mux) InFlight(s SessionID) int { return x.inflight[s] }

// swapToken replaces params._meta[key] by v, if present; it returns the
// new params and the old value.
func swapToken(params json.RawMessage, key string, v json.RawMessage) (json.RawMessage, json.RawMessage, error) {
	var p envelope
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, nil, fmt.Errorf("decoding params: %w", err)
	}
	meta := p["_meta"]
	if len(meta) == 0 || meta[0] != '{' {
		return params, nil, nil
	}
	newMeta, old, err := swapMember(meta, key, v)
	if err != nil || old == nil {
		return params, nil, err
	}
	p["_meta"] = newMeta
	out, err := json.Marshal(p)
	return out, old, err
}

// swapMember replaces obj[key] by v, if present.
func swapMember(obj json.RawMessage, key string, v json.RawMessage) (json.RawMessage, json.RawMessage, error) {
	var o envelope
	if err := json.Unmarshal(obj, &o); err != nil {
		return nil, nil, fmt.Errorf("decoding %s: %w", key, err)
	}
	old, ok := o[key]
	if !ok {
		return obj, nil, nil
	}
	o[key] = v
	out, err := json.Marshal(o)
	return out, old, err
}

// idKey is a JSON-RPC id in one spelling: a number by its value (a peer
// may write 1.0 back as 1), a string as its JSON.
func idKey(id json.RawMessage) string {
	id = bytes.TrimSpace(id)
	if len(id) > 0 && id[0] != '"' {
		if f, err := strconv.ParseFloat(string(id), 64); err == nil {
			return strconv.FormatFloat(f, 'g', -1, 64)
		}
	}
	return string(id)
}

func appendResult(dst []byte, id json.RawMessage, result string) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id...)
	dst = append(dst, `,"result":`...)
	return append(append(dst, result...), '}')
}

func appendError(dst []byte, id json.RawMessage, code int, message string) []byte {
	msg, _ := json.Marshal(message) // a string always marshals
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id...)
	dst = append(dst, `,"error":{"code":`...)
	dst = strconv.AppendInt(dst, int64(code), 10)
	dst = append(dst, `,"message":`...)
	return append(append(dst, msg...), "}}"...)
}

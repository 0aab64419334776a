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
	// Alone: Msg goes to the child's one session when it has exactly one
	// (it can be nobody else's), and to none otherwise.
	Alone bool
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

func hasID(id json.RawMessage) bool { return len(id) > 0 && string(id) != "null" }

// FromClient takes a message session s sends to the child and returns it
// as the child gets it; Child is nil when it does not go on (the client's
// notifications/initialized: the gateway sent the child its own; a
// subscription the child holds already, answered in Answer). A request is
// followed until its response, or until Lost or Forget.
func (x *Mux) FromClient(s SessionID, msg []byte) (Step, error) {
	f, err := parseFrame(msg)
	if err != nil {
		return Step{}, err
	}
	switch {
	case f.isRequest():
		answer, uri, err := x.subscription(s, &f)
		if answer != nil || err != nil {
			return Step{Answer: answer}, err
		}
		out, err := x.request(s, &f, uri)
		return Step{Child: out}, err
	case f.method.present():
		out, err := x.notification(s, &f)
		return Step{Child: out}, err
	case hasID(f.rawID()):
		k := idKey(f.rawID())
		q, ok := x.serverRq[k]
		if !ok || q.session != s {
			return Step{}, ErrNotYours
		}
		delete(x.serverRq, k)
		return Step{Child: msg}, nil
	}
	return Step{}, errors.New("decoding message: neither request, notification nor response")
}

// request rewrites a request's id and progressToken in place; sub is the
// URI of a resources/subscribe, "" for any other request.
func (x *Mux) request(s SessionID, f *frame, sub string) ([]byte, error) {
	token, err := f.progressToken()
	if err != nil {
		return nil, err
	}
	x.next++
	up := x.next
	var num [20]byte
	upID := strconv.AppendInt(num[:0], up, 10)
	// The client's id and token, kept in one allocation of their own:
	// the message is the caller's.
	id, tok := f.rawID(), f.raw(token)
	keep := append(append(make([]byte, 0, len(id)+len(tok)), id...), tok...)
	c := call{session: s, id: keep[:len(id):len(id)], sub: sub}
	if token.present() {
		c.token = keep[len(id):]
	}
	out := splice(f.b, edit{f.id, upID}, edit{token, upID})
	x.pending[up] = c
	x.inflight[s]++
	return out, nil
}

func (x *Mux) notification(s SessionID, f *frame) ([]byte, error) {
	switch f.methodName() {
	case "notifications/initialized":
		return nil, nil
	case "notifications/cancelled":
		// Its requestId is the client's; the child knows the request by
		// the mux's id. A cancel of no call of this session goes nowhere.
		at, err := f.param("requestId")
		if err != nil {
			return nil, err
		}
		up, ok := x.find(s, f.raw(at))
		if !ok {
			return nil, nil
		}
		return splice(f.b, edit{at, strconv.AppendInt(nil, up, 10)}, edit{}), nil
	}
	return f.b, nil
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
	f, err := parseFrame(msg)
	if err != nil {
		return Route{}, err
	}
	switch {
	case f.isRequest():
		return x.serverRequest(&f, f.b)
	case f.method.present():
		return x.childNotification(&f, f.b)
	}
	up, err := strconv.ParseInt(string(f.rawID()), 10, 64)
	c, ok := x.pending[up]
	if err != nil || !ok {
		return Route{}, nil // an answer to nobody (a forgotten session's): dropped
	}
	x.done(up, c)
	if c.sub != "" && f.error.present() {
		x.refused(c)
	}
	return Route{To: c.session, Msg: splice(f.b, edit{f.id, c.id}, edit{})}, nil
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
func (x *Mux) serverRequest(f *frame, msg []byte) (Route, error) {
	return x.routeServerRequest(f.rawID(), f.methodName(), msg)
}

// routeServerRequest routes server request msg of id and method.
func (x *Mux) routeServerRequest(id []byte, method string, msg []byte) (Route, error) {
	if method == "ping" {
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
// token it names (restored), one tagged with a subscriptions/listen to
// that call, list_changed to every session, the cancellation of a server
// request to its session, anything else as otherNotification says.
func (x *Mux) childNotification(f *frame, msg []byte) (Route, error) {
	method := f.methodName()
	if r, tagged, err := x.listenNotification(f); tagged || err != nil {
		return r, err
	}
	switch {
	case method == "notifications/progress":
		at, err := f.param("progressToken")
		if err != nil {
			return Route{}, err
		}
		up, err := strconv.ParseInt(string(f.raw(at)), 10, 64)
		c, ok := x.pending[up]
		if err != nil || !ok || c.token == nil {
			return Route{}, nil
		}
		return Route{To: c.session, Msg: splice(f.b, edit{at, c.token}, edit{})}, nil
	case strings.HasSuffix(method, "/list_changed"):
		return Route{Broadcast: true, Msg: bytes.Clone(msg), ToolsChanged: method == "notifications/tools/list_changed"}, nil
	case method == "notifications/resources/updated":
		to, err := x.updated(f)
		if len(to) == 0 || err != nil {
			return Route{}, err // nobody subscribed (any more)
		}
		return Route{Sessions: to, Msg: bytes.Clone(msg)}, nil
	case method == "notifications/cancelled":
		at, err := f.param("requestId")
		if err != nil {
			return Route{}, err
		}
		k := idKey(f.raw(at))
		if q, ok := x.serverRq[k]; ok {
			delete(x.serverRq, k)
			return Route{To: q.session, Msg: bytes.Clone(msg)}, nil
		}
		return Route{}, nil
	}
	return x.otherNotification(msg), nil
}

// listenNotification routes a notification tagged with the id of a
// subscriptions/listen in params._meta (SEP-2575: a server of the era
// stamps the listen's request id there, the mux's id on the child) to
// the session of that listen, the tag restored to the client's id; one
// tagged with the id of no call in flight is dropped. It reports whether
// the notification was tagged.
func (x *Mux) listenNotification(f *frame) (Route, bool, error) {
	at, err := subscriptionTag(f)
	if err != nil || !at.present() {
		return Route{}, false, err
	}
	up, err := strconv.ParseInt(string(f.raw(at)), 10, 64)
	c, ok := x.pending[up]
	if err != nil || !ok {
		return Route{}, true, nil
	}
	return Route{To: c.session, Msg: splice(f.b, edit{at, c.id}, edit{}), ToolsChanged: f.methodName() == "notifications/tools/list_changed"}, true, nil
}

// otherNotification routes a notification of no call or subscription (a
// log message, a task's status) to the one session with a call in
// flight. When several have one, nobody can tell whose it is, and it is
// dropped rather than shown to sessions of other callers, as a server
// request is refused then; when none has, it goes to the child's one
// session if it has only one (a per_session child's), else to none.
func (x *Mux) otherNotification(msg []byte) Route {
	switch len(x.inflight) {
	case 0:
		return Route{Alone: true, Msg: bytes.Clone(msg)}
	case 1:
		for s := range x.inflight {
			return Route{To: s, Msg: bytes.Clone(msg)}
		}
	}
	return Route{}
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

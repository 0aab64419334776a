package stdio

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// refMux is the mux as it was before it rewrote messages in place: every
// message decoded into a map of its members and encoded again. It shares
// the Mux's state and bookkeeping (done, find, refused, Lost, Forget) and
// keeps its own reading and rewriting, as the reference that
// FuzzMuxInPlace holds the in-place mux to.
type refMux struct{ *Mux }

// FromClient takes a message session s sends to the child and returns it
// as the child gets it; Child is nil when it does not go on (the client's
// notifications/initialized: the gateway sent the child its own; a
// subscription the child holds already, answered in Answer). A request is
// followed until its response, or until Lost or Forget.
func (x refMux) FromClient(s SessionID, msg []byte) (Step, error) {
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
func (x refMux) request(s SessionID, m envelope, sub string) ([]byte, error) {
	x.next++
	up := x.next
	c := call{session: s, id: m["id"], sub: sub}
	if p := m["params"]; len(p) > 0 && p[0] == '{' {
		params, token, err := refSwapToken(p, "progressToken", json.RawMessage(strconv.FormatInt(up, 10)))
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

func (x refMux) notification(s SessionID, m envelope) ([]byte, error) {
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
		params, _, err := refSwapMember(m["params"], "requestId", json.RawMessage(strconv.FormatInt(up, 10)))
		if err != nil {
			return nil, err
		}
		m["params"] = params
	}
	return json.Marshal(m)
}

// FromChild routes a message the child wrote. The route's Msg and Reply
// never share msg's memory: the caller may reuse it (the child's line
// reader does, for its next line), while Msg waits in a session's queue.
func (x refMux) FromChild(msg []byte) (Route, error) {
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

func (x refMux) serverRequest(m envelope, msg []byte) (Route, error) {
	return x.routeServerRequest(m["id"], m.method(), msg)
}

// childNotification routes a notification: progress to the call whose
// token it names (restored), list_changed to every session, the
// cancellation of a server request to its session, anything else to the
// one session with a call in flight, or to none.
func (x refMux) childNotification(m envelope, msg []byte) (Route, error) {
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
		params, _, err := refSwapMember(m["params"], "progressToken", c.token)
		if err != nil {
			return Route{}, err
		}
		m["params"] = params
		out, err := json.Marshal(m)
		return Route{To: c.session, Msg: out}, err
	case strings.HasSuffix(method, "/list_changed"):
		return Route{Broadcast: true, Msg: bytes.Clone(msg)}, nil
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
	return x.otherNotification(msg), nil
}

// refSwapToken replaces params._meta[key] by v, if present; it returns the
// new params and the old value.
func refSwapToken(params json.RawMessage, key string, v json.RawMessage) (json.RawMessage, json.RawMessage, error) {
	var p envelope
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, nil, fmt.Errorf("decoding params: %w", err)
	}
	meta := p["_meta"]
	if len(meta) == 0 || meta[0] != '{' {
		return params, nil, nil
	}
	newMeta, old, err := refSwapMember(meta, key, v)
	if err != nil || old == nil {
		return params, nil, err
	}
	p["_meta"] = newMeta
	out, err := json.Marshal(p)
	return out, old, err
}

// refSwapMember replaces obj[key] by v, if present.
func refSwapMember(obj json.RawMessage, key string, v json.RawMessage) (json.RawMessage, json.RawMessage, error) {
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

// subscription counts a resources/subscribe or resources/unsubscribe a
// session sent. It returns the mux's answer when the request does not go
// to the child; else nil, and for a subscribe the URI, to be undone if the
// child refuses it.
func (x refMux) subscription(s SessionID, m envelope) (answer []byte, uri string) {
	if !bytes.Contains(m["method"], []byte("subscribe")) {
		return nil, "" // the common case, without decoding the method
	}
	method := m.method()
	if method != "resources/subscribe" && method != "resources/unsubscribe" {
		return nil, ""
	}
	var p struct {
		URI string `json:"uri"`
	}
	if json.Unmarshal(m["params"], &p) != nil || p.URI == "" {
		return nil, "" // the child's to refuse
	}
	held := x.subs[p.URI]
	if method == "resources/subscribe" {
		if len(held) > 0 {
			held[s] = true
			return appendResult(nil, m["id"], "{}"), ""
		}
		x.subs[p.URI] = map[SessionID]bool{s: true}
		return nil, p.URI
	}
	if !held[s] || len(held) > 1 {
		// Another session still wants the URI, or this one never
		// subscribed: the child's subscription stays as it is.
		delete(held, s)
		return appendResult(nil, m["id"], "{}"), ""
	}
	delete(x.subs, p.URI)
	return nil, ""
}

// updated returns the sessions subscribed to the URI of a
// notifications/resources/updated: to it, or to a resource it is a
// sub-resource of (the spec's "might be a sub-resource of the one that
// the client actually subscribed to"), each once.
func (x refMux) updated(m envelope) []SessionID {
	var p struct {
		URI string `json:"uri"`
	}
	if json.Unmarshal(m["params"], &p) != nil || p.URI == "" {
		return nil
	}
	var to []SessionID
	seen := map[SessionID]bool{}
	for uri, held := range x.subs {
		if !covers(uri, p.URI) {
			continue
		}
		for s := range held {
			if !seen[s] {
				seen[s] = true
				to = append(to, s)
			}
		}
	}
	return to
}

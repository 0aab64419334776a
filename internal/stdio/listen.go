package stdio

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"

	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
)

// metaSubscriptionID tags each message of a subscriptions/listen stream
// with the id of the listen request it belongs to (SEP-2575).
const metaSubscriptionID = "io.modelcontextprotocol/subscriptionId"

// subscriptions are the notifications a subscriptions/listen asks for, and
// the part of them a server agrees to (SEP-2575).
type subscriptions struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitempty"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitempty"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
}

// any reports whether s asks for anything.
func (s subscriptions) any() bool {
	return s.ToolsListChanged || s.PromptsListChanged || s.ResourcesListChanged || len(s.ResourceSubscriptions) > 0
}

// agreed is the part of want that a child whose initialize result is init
// can honour: a list_changed its capabilities declare, resource updates
// when it takes subscriptions.
func agreed(want subscriptions, init []byte) subscriptions {
	var r struct {
		Capabilities struct {
			Tools, Prompts *struct {
				ListChanged bool `json:"listChanged"`
			}
			Resources *struct {
				ListChanged bool `json:"listChanged"`
				Subscribe   bool `json:"subscribe"`
			}
		} `json:"capabilities"`
	}
	_ = json.Unmarshal(init, &r)
	c := r.Capabilities
	var out subscriptions
	out.ToolsListChanged = want.ToolsListChanged && c.Tools != nil && c.Tools.ListChanged
	out.PromptsListChanged = want.PromptsListChanged && c.Prompts != nil && c.Prompts.ListChanged
	if c.Resources != nil {
		out.ResourcesListChanged = want.ResourcesListChanged && c.Resources.ListChanged
		if c.Resources.Subscribe {
			out.ResourceSubscriptions = want.ResourceSubscriptions
		}
	}
	return out
}

// wants reports whether a listen that agreed to s relays the child's
// notification of method, about uri for resources/updated.
func (s subscriptions) wants(method, uri string) bool {
	switch method {
	case "notifications/tools/list_changed":
		return s.ToolsListChanged
	case "notifications/prompts/list_changed":
		return s.PromptsListChanged
	case "notifications/resources/list_changed":
		return s.ResourcesListChanged
	case "notifications/resources/updated":
		return slices.Contains(s.ResourceSubscriptions, uri)
	}
	return false
}

// serveListen serves subscriptions/listen (SEP-2575) on a child of an
// older version: a session of its own on the child, subscribed to the
// resources asked for, whose list_changed and resources/updated
// notifications, those the listen agreed to, are the stream, each tagged
// with the listen's id. The stream opens with the acknowledgement of what
// was agreed, and ends when the client leaves (or at once, when nothing
// was); the session then ends, its subscriptions with it.
func (b *Bridge) serveListen(w http.ResponseWriter, r *http.Request, body, id []byte) {
	want, asked := listenParams(body)
	if !asked {
		writeError(w, id, errListenParams)
		return
	}
	cs, err := b.child.Open()
	if err != nil {
		writeError(w, id, &mcpmsg.Error{Status: http.StatusServiceUnavailable, Code: mcpmsg.CodeInternalError, Message: err.Error()})
		return
	}
	defer cs.Close()
	ok := agreed(want, cs.Initialize())
	for i, uri := range ok.ResourceSubscriptions {
		req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "listen-" + strconv.Itoa(i), "method": "resources/subscribe", "params": map[string]string{"uri": uri}})
		if err := cs.Send(req); err != nil {
			writeError(w, id, sendError(err))
			return
		}
	}
	openListen(w, id, ok)
	if ok.any() {
		b.relayListen(w, r, cs, ok, id)
	}
	endListen(w, id)
}

// openListen opens the stream of the listen request id, which agreed to
// ok, with its acknowledgement (SEP-2575).
func openListen(w http.ResponseWriter, id []byte, ok subscriptions) {
	startStream(w)
	ack, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
		"params": map[string]any{"_meta": map[string]json.RawMessage{metaSubscriptionID: id}, "notifications": ok}})
	writeEvent(w, ack)
}

// endListen ends the stream of the listen request id with its result.
func endListen(w http.ResponseWriter, id []byte) {
	writeEvent(w, appendResult(nil, id, `{"resultType":"complete","_meta":{"`+metaSubscriptionID+`":`+string(id)+`}}`))
}

// listenParams returns what a subscriptions/listen asks for; false when
// it does not say (params.notifications is required).
func listenParams(body []byte) (subscriptions, bool) {
	var p struct {
		Params struct {
			Notifications *subscriptions `json:"notifications"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &p) != nil || p.Params.Notifications == nil {
		return subscriptions{}, false
	}
	return *p.Params.Notifications, true
}

// errListenParams is the refusal of a listen that does not say what it
// asks for.
var errListenParams = &mcpmsg.Error{Status: http.StatusBadRequest, Code: codeInvalidParams, Message: "missing required 'notifications' field"}

// relayListen writes the notifications of cs that s agreed to, tagged with
// the listen's id, until the client leaves or the child's session ends.
func (b *Bridge) relayListen(w http.ResponseWriter, r *http.Request, cs *Session, s subscriptions, id []byte) {
	for {
		var msg []byte
		select {
		case <-r.Context().Done():
			return
		case m, open := <-cs.Messages():
			if !open {
				return
			}
			msg = m
		}
		e, err := parseEnvelope(msg)
		if err != nil {
			continue
		}
		if e.isRequest() { // no client to ask on a listen stream
			_ = cs.Send(appendError(nil, e["id"], codeMethodNotFound, "the client speaks "+statelessVersion+", which has no server-to-client requests"))
			continue
		}
		var params map[string]json.RawMessage
		_ = json.Unmarshal(e["params"], &params)
		var uri string
		_ = json.Unmarshal(params["uri"], &uri)
		if !s.wants(e.method(), uri) {
			continue // an answer to a subscribe, or what was not asked for
		}
		if out, err := tagSubscription(e, params, id); err == nil {
			writeEvent(w, out)
		}
	}
}

// tagSubscription returns notification e, whose params are params, with
// params._meta naming the listen request id.
func tagSubscription(e envelope, params map[string]json.RawMessage, id []byte) ([]byte, error) {
	meta := map[string]json.RawMessage{}
	_ = json.Unmarshal(params["_meta"], &meta)
	meta[metaSubscriptionID] = id
	if params == nil {
		params = map[string]json.RawMessage{}
	}
	var err error
	if params["_meta"], err = json.Marshal(meta); err != nil {
		return nil, err
	}
	if e["params"], err = json.Marshal(params); err != nil {
		return nil, err
	}
	return json.Marshal(e)
}

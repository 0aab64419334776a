package stdio

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
)

// serveNative serves a 2026-07-28 request on the replica's stateless twin
// tc, which speaks that era: after the checks an HTTP server of the era
// makes (checkStateless against the versions the twin supports, and for
// a tools/call its Mcp-Param-* headers: checkParams), server/discover is
// answered from the twin's probe, and any other request goes to the twin
// as the client sent it, on a session of its own for this request alone
// (ids and progress tokens rewritten by the mux, nothing else), its
// answer as the twin wrote it: an input_required result (SEP-2322)
// included. A dropped answer is the request's cancel.
func (b *Bridge) serveNative(w http.ResponseWriter, r *http.Request, body []byte, m *mcpmsg.Message, tc *Child) {
	discovered, _ := tc.initialized()
	if b.refuseStateless(w, r, body, m, supportedVersions(discovered)) {
		return
	}
	switch m.Method {
	case "server/discover":
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(appendResult(nil, m.ID, string(discovered)))
		return
	case "subscriptions/listen":
		b.serveHubListen(w, r, body, m.ID, tc)
		return
	}
	cs, err := tc.Open()
	if err != nil {
		writeError(w, m.ID, &mcpmsg.Error{Status: http.StatusServiceUnavailable, Code: mcpmsg.CodeInternalError, Message: err.Error(), RetryAfter: time.Second})
		return
	}
	defer cs.Close()
	if err := cs.Send(body); err != nil {
		writeError(w, m.ID, sendError(err))
		return
	}
	answered := relay(w, r, cs.Messages(), m.ID, tc.opts.Name, relayOpts{
		fix:       func(msg []byte) []byte { return nativeMessage(cs, msg) },
		status:    statelessStatus,
		sseResult: acceptsSSE(r),
	})
	if !answered {
		cancelCall(cs, m.ID)
	}
}

// supportedVersions are the versions of a server/discover result.
func supportedVersions(discovered json.RawMessage) []string {
	var d struct {
		Versions []string `json:"supportedVersions"`
	}
	_ = json.Unmarshal(discovered, &d)
	return d.Versions
}

// nativeMessage returns a message of the twin for one request's client,
// as the twin wrote it, or nil when it does not go on (refuseOrDrop).
func nativeMessage(cs *Session, msg []byte) []byte {
	f, err := parseFrame(msg)
	if err != nil {
		return msg
	}
	if refuseOrDrop(cs, &f) {
		return nil
	}
	return f.b
}

// refuseOrDrop reports whether a message of the child for a 2026-07-28
// request's client does not go on: a server request, which that era does
// not have (it asks for input in a result, SEP-2322), is answered with an
// error to the child; a list change or a resource update goes on the
// subscriptions/listen stream it is tagged for alone (SEP-2575), and one
// tagged for none, which the child sends every session, is dropped.
func refuseOrDrop(cs *Session, f *frame) bool {
	if f.isRequest() {
		_ = cs.Send(appendError(nil, f.rawID(), codeMethodNotFound, "the client speaks "+statelessVersion+", which has no server-to-client requests"))
		return true
	}
	m := f.methodName()
	if !strings.HasSuffix(m, "/list_changed") && m != "notifications/resources/updated" {
		return false
	}
	return !taggedSubscription(f)
}

// taggedSubscription reports whether a notification names the
// subscriptions/listen it belongs to in params._meta (SEP-2575).
func taggedSubscription(f *frame) bool {
	at, err := subscriptionTag(f)
	return err == nil && at.present()
}

// subscriptionTag returns where a notification's
// params._meta["io.modelcontextprotocol/subscriptionId"] is.
func subscriptionTag(f *frame) (span, error) {
	meta, err := f.param("_meta")
	if err != nil || !meta.present() {
		return span{}, err
	}
	return memberOf(f.b, meta, metaSubscriptionID)
}

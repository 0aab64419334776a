package stdio

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// Resource subscriptions on a shared child (MCP 2025-11-25, "Resources",
// "Subscriptions"): the child has one client, the gateway, so it hears of
// a URI once. The first session to subscribe to a URI sends
// resources/subscribe on; later ones are answered by the mux. The last to
// unsubscribe, or to end, sends resources/unsubscribe on.
// notifications/resources/updated goes to the sessions subscribed to its
// URI, and to no other.

// subs is the mux's subscription count: URI -> the sessions subscribed.
type subs map[string]map[SessionID]bool

// subscription counts a resources/subscribe or resources/unsubscribe a
// session sent. It returns the mux's answer when the request does not go
// to the child; else nil, and for a subscribe the URI, to be undone if the
// child refuses it.
func (x *Mux) subscription(s SessionID, f *frame) (answer []byte, uri string, err error) {
	if !bytes.Contains(f.raw(f.method), []byte("subscribe")) {
		return nil, "", nil // the common case, without decoding the method
	}
	method := f.methodName()
	if method != "resources/subscribe" && method != "resources/unsubscribe" {
		return nil, "", nil
	}
	if uri, err = f.paramString("uri"); uri == "" || err != nil {
		return nil, "", err // the child's to refuse, or no message
	}
	held := x.subs[uri]
	if method == "resources/subscribe" {
		if len(held) > 0 {
			held[s] = true
			return appendResult(nil, f.rawID(), "{}"), "", nil
		}
		x.subs[uri] = map[SessionID]bool{s: true}
		return nil, uri, nil
	}
	if !held[s] || len(held) > 1 {
		// Another session still wants the URI, or this one never
		// subscribed: the child's subscription stays as it is.
		delete(held, s)
		return appendResult(nil, f.rawID(), "{}"), "", nil
	}
	delete(x.subs, uri)
	return nil, "", nil
}

// refused undoes the subscription of call c, which the child answered
// with an error: the session is not subscribed, and a later session's
// subscribe goes to the child again.
func (x *Mux) refused(c call) {
	if held := x.subs[c.sub]; held != nil {
		delete(held, c.session)
		if len(held) == 0 {
			delete(x.subs, c.sub)
		}
	}
}

// unsubscribeAll ends session s's subscriptions and returns the
// resources/unsubscribe requests of the URIs it was the last to hold, for
// the child; their answers go to nobody.
func (x *Mux) unsubscribeAll(s SessionID) [][]byte {
	var out [][]byte
	for uri, held := range x.subs {
		if !held[s] {
			continue
		}
		delete(held, s)
		if len(held) > 0 {
			continue
		}
		delete(x.subs, uri)
		x.next++
		q, _ := json.Marshal(uri) // a string always marshals
		out = append(out, []byte(`{"jsonrpc":"2.0","id":`+strconv.FormatInt(x.next, 10)+`,"method":"resources/unsubscribe","params":{"uri":`+string(q)+`}}`))
	}
	return out
}

// updated returns the sessions subscribed to the URI of a
// notifications/resources/updated: to it, or to a resource it is a
// sub-resource of (the spec's "might be a sub-resource of the one that
// the client actually subscribed to"), each once.
func (x *Mux) updated(f *frame) ([]SessionID, error) {
	updated, err := f.paramString("uri")
	if updated == "" || err != nil {
		return nil, err
	}
	var to []SessionID
	seen := map[SessionID]bool{}
	for uri, held := range x.subs {
		if !covers(uri, updated) {
			continue
		}
		for s := range held {
			if !seen[s] {
				seen[s] = true
				to = append(to, s)
			}
		}
	}
	return to, nil
}

// covers reports whether a subscription to sub covers an update of uri:
// the same URI, or one below it in a path.
func covers(sub, uri string) bool {
	if sub == uri {
		return true
	}
	if !strings.HasPrefix(uri, sub) {
		return false
	}
	return strings.HasSuffix(sub, "/") || uri[len(sub)] == '/'
}

package stdio

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
)

// hubListenID is the id of the twin's own subscriptions/listen.
const hubListenID = `"mcpfleet-listen"`

// hubAckTimeout bounds the wait for the acknowledgement of the twin's
// own listen.
const hubAckTimeout = 10 * time.Second

// A listenHub shares one subscriptions/listen on a stateless twin among
// the clients' listens (SEP-2575). A server of the Go SDK keeps one
// listen per connection: a second one on the twin's would take the first
// one's notifications, and the end of either would end both. So the hub
// opens one listen of its own, asking for every list change, the first
// time a client listens, keeps it for the twin's run (ending it would
// race with the next one), and hands each change to the clients' listens
// that asked for it. Its methods are safe for concurrent use.
type listenHub struct {
	mu   sync.Mutex // guards cs, subs; held while the hub's listen opens
	cs   *Session   // the session of the hub's listen; nil when none
	subs map[*hubSub]struct{}
}

// hubSub is one client's listen on the hub: what it agreed to, and the
// notifications for it, tagged already with its id.
type hubSub struct {
	want subscriptions
	id   []byte
	ch   chan []byte // closed when the hub's listen ends
}

// join adds a client's listen of id, which agreed to want, to the hub of
// twin c, opening the hub's own listen first when it has none.
func (h *listenHub) join(ctx context.Context, c *Child, want subscriptions, id []byte) (*hubSub, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cs == nil {
		if err := h.openLocked(ctx, c); err != nil {
			return nil, err
		}
	}
	s := &hubSub{want: want, id: id, ch: make(chan []byte, 64)}
	if h.subs == nil {
		h.subs = map[*hubSub]struct{}{}
	}
	h.subs[s] = struct{}{}
	return s, nil
}

// leave removes a client's listen from the hub.
func (h *listenHub) leave(s *hubSub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs, s)
}

// openLocked opens the hub's listen on c and waits for its
// acknowledgement, so that no change after a client's acknowledgement is
// missed.
func (h *listenHub) openLocked(ctx context.Context, c *Child) error {
	cs, err := c.Open()
	if err != nil {
		return err
	}
	req := `{"jsonrpc":"2.0","id":` + hubListenID + `,"method":"subscriptions/listen","params":{"notifications":` +
		`{"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true},"_meta":{"` +
		metaProtocolVersion + `":"` + statelessVersion + `","` + metaClientCapabilities + `":{}}}}`
	if err := cs.Send([]byte(req)); err != nil {
		cs.Close()
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, hubAckTimeout)
	defer cancel()
	for {
		select {
		case <-ctx.Done():
			cs.Close()
			return ctx.Err()
		case msg, ok := <-cs.Messages():
			if !ok {
				return ErrSessionEnded
			}
			if f, err := parseFrame(msg); err == nil && f.methodName() == "notifications/subscriptions/acknowledged" {
				h.cs = cs
				go h.pump(cs)
				return nil
			}
			if f, err := parseFrame(msg); err == nil && !f.method.present() {
				cs.Close() // the listen answered at once: it agreed to nothing
				return errors.New("the twin's subscriptions/listen ended at once")
			}
		}
	}
}

// pump hands each list change of the hub's listen on cs to the clients'
// listens that asked for it, until cs ends (the twin went away); then
// every client's listen ends, and the next one opens the hub's again.
func (h *listenHub) pump(cs *Session) {
	for msg := range cs.Messages() {
		e, err := parseEnvelope(msg)
		if err != nil || e.isRequest() || !strings.HasSuffix(e.method(), "/list_changed") {
			if err == nil && e.isRequest() {
				_ = cs.Send(appendError(nil, e["id"], codeMethodNotFound, "the client speaks "+statelessVersion+", which has no server-to-client requests"))
			}
			continue
		}
		var params map[string]json.RawMessage
		_ = json.Unmarshal(e["params"], &params)
		h.mu.Lock()
		for s := range h.subs {
			if !s.want.wants(e.method(), "") {
				continue
			}
			if out, err := tagSubscription(e, params, s.id); err == nil {
				select {
				case s.ch <- out:
				default: // a client 64 changes behind loses one: they say the same
				}
			}
		}
		h.mu.Unlock()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cs == cs {
		h.cs = nil
		for s := range h.subs {
			close(s.ch)
		}
		clear(h.subs)
	}
}

// serveHubListen serves a client's subscriptions/listen on the twin tc's
// hub: the acknowledgement of what tc agrees to of what it asks (its
// discover result's capabilities), the list changes it asked for, each
// tagged with its id, until the client leaves or tc goes away, then its
// result. A listen that asks for resource updates is served on the
// replica's child (serveListen): the hub asks for list changes alone.
func (b *Bridge) serveHubListen(w http.ResponseWriter, r *http.Request, body, id []byte, tc *Child) {
	want, asked := listenParams(body)
	switch {
	case !asked:
		writeError(w, id, errListenParams)
		return
	case len(want.ResourceSubscriptions) > 0:
		b.serveListen(w, r, body, id)
		return
	}
	discovered, _ := tc.initialized()
	ok := agreed(want, discovered)
	var sub *hubSub
	if ok.any() {
		var err error
		if sub, err = b.twin.hub.join(r.Context(), tc, ok, id); err != nil {
			writeError(w, id, &mcpmsg.Error{Status: http.StatusServiceUnavailable, Code: mcpmsg.CodeInternalError, Message: "listening on the stdio child: " + err.Error(), RetryAfter: time.Second})
			return
		}
		defer b.twin.hub.leave(sub)
	}
	openListen(w, id, ok)
	for sub != nil {
		select {
		case <-r.Context().Done():
			return
		case msg, open := <-sub.ch:
			if !open {
				sub = nil
				break
			}
			writeEvent(w, msg)
		}
	}
	endListen(w, id)
}

package stdio

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// toChild is what a FromClient step sends the child.
func toChild(st Step, err error) ([]byte, error) { return st.Child, err }

func member(t *testing.T, msg []byte, path ...string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(msg, &v); err != nil {
		t.Fatalf("%s: %v", msg, err)
	}
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = m[p]
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// TestMuxSameIDManySessions: sessions that all use id 1 each get their own
// answer, whatever order the child answers in.
func TestMuxSameIDManySessions(t *testing.T) {
	x := NewMux()
	sent := map[string]SessionID{} // the child's id -> session
	for s := SessionID(1); s <= 20; s++ {
		out, err := toChild(x.FromClient(s, []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{"s":%d}}}`, s))))
		if err != nil {
			t.Fatal(err)
		}
		id := member(t, out, "id")
		if _, dup := sent[id]; dup {
			t.Fatalf("two sessions' calls went to the child with id %s", id)
		}
		sent[id] = s
		if got := member(t, out, "params", "arguments", "s"); got != fmt.Sprint(s) {
			t.Fatalf("arguments changed: %s", out)
		}
	}
	for id, s := range sent { // map order: the child answers in any order
		r, err := x.FromChild([]byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"for":%d}}`, id, s)))
		if err != nil {
			t.Fatal(err)
		}
		if r.To != s || r.Broadcast || member(t, r.Msg, "id") != "1" || member(t, r.Msg, "result", "for") != fmt.Sprint(s) {
			t.Errorf("the child's answer %s for session %d went to %d as %s", id, s, r.To, r.Msg)
		}
	}
	if r, _ := x.FromChild([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)); r.Msg != nil {
		t.Errorf("a second answer to a done call was delivered: %+v", r)
	}
}

func TestMuxProgressAndCancel(t *testing.T) {
	x := NewMux()
	a, _ := toChild(x.FromClient(1, []byte(`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"slow","_meta":{"progressToken":"tok"}}}`)))
	b, _ := toChild(x.FromClient(2, []byte(`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"slow","_meta":{"progressToken":"tok"}}}`)))
	ta, tb := member(t, a, "params", "_meta", "progressToken"), member(t, b, "params", "_meta", "progressToken")
	if ta == tb || ta == `"tok"` {
		t.Fatalf("progress tokens on the child %s and %s, want two of the mux's own", ta, tb)
	}
	r, err := x.FromChild([]byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":` + tb + `,"progress":1}}`))
	if err != nil || r.To != 2 || member(t, r.Msg, "params", "progressToken") != `"tok"` || member(t, r.Msg, "params", "progress") != "1" {
		t.Errorf("progress for session 2's call: %+v, %v", r, err)
	}
	c, _ := toChild(x.FromClient(1, []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"x","reason":"bored"}}`)))
	if got := member(t, c, "params", "requestId"); got != member(t, a, "id") {
		t.Errorf("cancel names %s on the child, want session 1's call %s", got, member(t, a, "id"))
	}
	if c, _ := toChild(x.FromClient(3, []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"x"}}`))); c != nil {
		t.Errorf("session 3 cancelled another's call: %s", c)
	}
	if c, _ := toChild(x.FromClient(1, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))); c != nil {
		t.Errorf("a client's initialized went on to the child: %s", c)
	}
}

func TestMuxServerRequests(t *testing.T) {
	x := NewMux()
	if r, _ := x.FromChild([]byte(`{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{}}`)); r.Msg != nil || member(t, r.Reply, "error", "code") != "-32603" {
		t.Errorf("with no call in flight: %+v, want an error to the child", r)
	}
	if r, _ := x.FromChild([]byte(`{"jsonrpc":"2.0","id":8,"method":"ping"}`)); member(t, r.Reply, "result") != "{}" {
		t.Errorf("ping: %+v", r)
	}
	_, _ = toChild(x.FromClient(1, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask"}}`)))
	r, _ := x.FromChild([]byte(`{"jsonrpc":"2.0","id":9,"method":"elicitation/create","params":{}}`))
	if r.To != 1 || r.Msg == nil || r.Reply != nil {
		t.Fatalf("with one session's call in flight: %+v, want it sent to session 1", r)
	}
	if _, err := toChild(x.FromClient(2, []byte(`{"jsonrpc":"2.0","id":9,"result":{}}`))); !errors.Is(err, ErrNotYours) {
		t.Errorf("session 2 answered session 1's server request: %v", err)
	}
	if out, err := toChild(x.FromClient(1, []byte(`{"jsonrpc":"2.0","id":9.0,"result":{"action":"accept"}}`))); err != nil || out == nil {
		t.Errorf("session 1's answer: %s, %v", out, err)
	}
	_, _ = toChild(x.FromClient(2, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask"}}`)))
	if r, _ := x.FromChild([]byte(`{"jsonrpc":"2.0","id":10,"method":"roots/list"}`)); r.Msg != nil || r.Reply == nil {
		t.Errorf("with two sessions' calls in flight: %+v, want an error to the child", r)
	}
	if r, _ := x.FromChild([]byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)); !r.Broadcast {
		t.Errorf("list_changed: %+v, want it to every session", r)
	}
}

// TestMuxOtherNotification: a notification of no call or subscription (a
// log line) goes to the one session with a call in flight; with several,
// it reaches no session: it could be another caller's; with none, only
// a child's one session may have it.
func TestMuxOtherNotification(t *testing.T) {
	x := NewMux()
	log := []byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"alice's file"}}`)
	if r, _ := x.FromChild(log); r.Msg == nil || !r.Alone || r.Broadcast || len(r.Sessions) > 0 {
		t.Errorf("no call in flight: %+v, want it to the child's session if it has one alone", r)
	}
	_, _ = toChild(x.FromClient(1, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read"}}`)))
	if r, _ := x.FromChild(log); r.To != 1 || r.Broadcast || r.Msg == nil {
		t.Errorf("one session's call in flight: %+v, want it sent to session 1", r)
	}
	_, _ = toChild(x.FromClient(2, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read"}}`)))
	if r, _ := x.FromChild(log); r.Msg != nil || r.Broadcast || len(r.Sessions) > 0 {
		t.Errorf("two sessions' calls in flight: %+v, want it dropped", r)
	}
}

func TestMuxLostAndForget(t *testing.T) {
	x := NewMux()
	_, _ = toChild(x.FromClient(1, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}`)))
	_, _ = toChild(x.FromClient(2, []byte(`{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"a"}}`)))
	_, _ = toChild(x.FromClient(2, []byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"a"}}`)))
	r, _ := x.FromChild([]byte(`{"jsonrpc":"2.0","id":"s1","method":"roots/list"}`))
	if r.Msg != nil {
		t.Fatalf("a server request with two sessions busy went to %d", r.To)
	}
	if replies := x.Forget(1); len(replies) != 0 || x.InFlight(1) != 0 {
		t.Errorf("Forget(1): %q, %d in flight", replies, x.InFlight(1))
	}
	r, _ = x.FromChild([]byte(`{"jsonrpc":"2.0","id":"s2","method":"roots/list"}`))
	if r.To != 2 {
		t.Fatalf("with session 2 alone busy, a server request went to %+v", r)
	}
	if replies := x.Forget(2); len(replies) != 1 || member(t, replies[0], "id") != `"s2"` {
		t.Errorf("Forget(2) answered %q, want an error for s2", replies)
	}
	_, _ = toChild(x.FromClient(3, []byte(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"a"}}`)))
	lost := x.Lost()
	if len(lost) != 1 || lost[0].Session != 3 || string(lost[0].ID) != "5" {
		t.Errorf("Lost = %+v, want session 3's call 5", lost)
	}
	if len(x.Lost()) != 0 {
		t.Error("Lost twice returned the calls twice")
	}
}

func TestMuxRefuses(t *testing.T) {
	x := NewMux()
	for _, in := range []string{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, `nope`, `{"jsonrpc":"2.0"}`, `null`} {
		if out, err := toChild(x.FromClient(1, []byte(in))); err == nil {
			t.Errorf("FromClient(%s) = %s, want an error", in, out)
		}
	}
	if _, err := x.FromChild([]byte("Server started on stdio")); err == nil {
		t.Error("a non-JSON line from the child was routed")
	}
}

// FuzzMuxFromChild: whatever a child writes, the mux neither panics nor
// delivers to a session that has no call, nor loses track of its calls.
func FuzzMuxFromChild(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"result":{}}`, `{"jsonrpc":"2.0","id":"s","method":"roots/list"}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1}}`, `[1]`, `{"id":null}`, `{"method":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		x := NewMux()
		if _, err := toChild(x.FromClient(7, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":"t"}}}`))); err != nil {
			t.Fatal(err)
		}
		r, err := x.FromChild(line)
		if err != nil {
			return
		}
		if r.Msg != nil && !r.Broadcast && !r.Alone && r.To != 7 {
			t.Fatalf("%s went to session %d", line, r.To)
		}
		in := x.InFlight(7)
		if lost := len(x.Lost()); lost != in || in > 1 {
			t.Fatalf("%d calls in flight, %d lost, after one call", in, lost)
		}
	})
}

// TestMuxRouteOwnsItsMessage: what FromChild routes is the mux's own
// copy, whatever the path: the child's reader reuses its line buffer for
// the next line while the message waits in a session's queue.
func TestMuxRouteOwnsItsMessage(t *testing.T) {
	x := NewMux()
	if _, err := x.FromClient(1, []byte(`{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"u://a"}}`)); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hello"}}`,
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
		`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"u://a"}}`,
		`{"jsonrpc":"2.0","id":"s","method":"roots/list"}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
	} {
		buf := []byte(line)
		r, err := x.FromChild(buf)
		if err != nil || r.Msg == nil {
			t.Fatalf("%s: %+v, %v", line, r, err)
		}
		want := string(r.Msg)
		for i := range buf {
			buf[i] = 'x' // the reader's next line
		}
		if string(r.Msg) != want {
			t.Errorf("%s: the routed message changed with the reader's buffer: %s", line, r.Msg)
		}
	}
}

// TestMuxInvalidUTF8: a message with bytes that are not UTF-8 goes on with
// each replaced by U+FFFD, as encoding/json would decode it, never as it
// came (RFC 8259 wants UTF-8, and a reader may take such bytes otherwise).
func TestMuxInvalidUTF8(t *testing.T) {
	x := NewMux()
	if _, err := x.FromClient(1, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}`)); err != nil {
		t.Fatal(err)
	}
	r, err := x.FromChild([]byte("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"data\":\"a\xffb\xc0\"}}"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "\"data\":\"a\uFFFDb\uFFFD\""; !strings.Contains(string(r.Msg), want) || !utf8.Valid(r.Msg) {
		t.Errorf("routed %q, want it to hold %q", r.Msg, want)
	}
}

// TestMuxRoutesListenNotifications: a notification the child tags with a
// subscriptions/listen's id (SEP-2575) goes to that listen's session
// alone, tagged with the client's id, even a list change, which untagged
// goes to every session; one tagged with an id of no call is dropped.
func TestMuxRoutesListenNotifications(t *testing.T) {
	x := NewMux()
	listen, _ := toChild(x.FromClient(1, []byte(`{"jsonrpc":"2.0","id":"l","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}`)))
	if _, err := x.FromClient(2, []byte(`{"jsonrpc":"2.0","id":"l","method":"tools/call","params":{"name":"t"}}`)); err != nil {
		t.Fatal(err)
	}
	up := member(t, listen, "id")
	tests := []struct {
		msg  string
		to   SessionID
		tag  string
		gone bool
	}{
		{msg: `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":` + up + `},"notifications":{}}}`, to: 1, tag: `"l"`},
		{msg: `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":` + up + `}}}`, to: 1, tag: `"l"`},
		{msg: `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":999}}}`, gone: true},
	}
	for _, tt := range tests {
		r, err := x.FromChild([]byte(tt.msg))
		switch {
		case err != nil:
			t.Errorf("%s: %v", tt.msg, err)
		case tt.gone && (r.Msg != nil || r.Broadcast):
			t.Errorf("%s: routed %+v, want it dropped", tt.msg, r)
		case !tt.gone && (r.Broadcast || r.To != tt.to || member(t, r.Msg, "params", "_meta", "io.modelcontextprotocol/subscriptionId") != tt.tag):
			t.Errorf("%s: to %d (broadcast %v) as %s, want session %d tagged %s", tt.msg, r.To, r.Broadcast, r.Msg, tt.to, tt.tag)
		}
	}
	if r, _ := x.FromChild([]byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)); !r.Broadcast {
		t.Errorf("an untagged list change: %+v, want it sent to every session", r)
	}
}

// TestDeliverAlone: a route for a child's one session reaches it when the
// child has only that session, and nobody when it has two.
func TestDeliverAlone(t *testing.T) {
	c := &Child{sessions: map[SessionID]*Session{}}
	open := func(id SessionID) *Session {
		s := &Session{c: c, id: id, out: make(chan []byte, 4)}
		c.sessions[id] = s
		return s
	}
	a := open(1)
	c.deliverLocked(Route{Alone: true, Msg: []byte(`{"n":1}`)})
	if len(a.out) != 1 {
		t.Fatalf("the one session got %d messages, want 1", len(a.out))
	}
	b := open(2)
	c.deliverLocked(Route{Alone: true, Msg: []byte(`{"n":2}`)})
	if len(a.out) != 1 || len(b.out) != 0 {
		t.Errorf("with two sessions: %d and %d messages, want none more", len(a.out)-1, len(b.out))
	}
}

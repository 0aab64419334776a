package stdio

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
)

// subscribe sends session s's resources/subscribe (or unsubscribe) of uri
// through x and returns what went to the child and the mux's own answer.
func subscribe(t *testing.T, x *Mux, s SessionID, method, uri string) Step {
	t.Helper()
	st, err := x.FromClient(s, []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"resources/%s","params":{"uri":%q}}`, 100+s, method, uri)))
	if err != nil {
		t.Fatal(err)
	}
	if (st.Child == nil) == (st.Answer == nil) {
		t.Fatalf("session %d's %s of %s: child %s, answer %s; want exactly one", s, method, uri, st.Child, st.Answer)
	}
	if st.Answer != nil && (member(t, st.Answer, "id") != fmt.Sprint(100+s) || member(t, st.Answer, "result") != "{}") {
		t.Errorf("the mux's answer to session %d: %s", s, st.Answer)
	}
	return st
}

// answer has the child answer the request it got, with result or an
// error, and returns the route of that answer.
func answer(t *testing.T, x *Mux, sent []byte, fail bool) Route {
	t.Helper()
	body := `"result":{}`
	if fail {
		body = `"error":{"code":-32602,"message":"no such resource"}`
	}
	r, err := x.FromChild([]byte(`{"jsonrpc":"2.0","id":` + member(t, sent, "id") + `,` + body + `}`))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// updatedTo routes the child's notifications/resources/updated of uri
// and returns the sessions it goes to.
func updatedTo(t *testing.T, x *Mux, uri string) []SessionID {
	t.Helper()
	r, err := x.FromChild([]byte(`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"` + uri + `"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if r.Broadcast || (r.Msg == nil) != (r.Sessions == nil) {
		t.Fatalf("the update of %s routed as %+v", uri, r)
	}
	slices.Sort(r.Sessions)
	return r.Sessions
}

// TestMuxSubscriptionsCountedPerChild: the child gets resources/subscribe
// of a URI from the first session alone and resources/unsubscribe with
// the last; a session that ends counts as unsubscribing; an update goes
// to the sessions subscribed to its URI and to no other.
func TestMuxSubscriptionsCountedPerChild(t *testing.T) {
	x := NewMux()
	first := subscribe(t, x, 1, "subscribe", "file:///a")
	if first.Child == nil || member(t, first.Child, "params", "uri") != `"file:///a"` {
		t.Fatalf("the first subscribe of file:///a did not go to the child: %+v", first)
	}
	if r := answer(t, x, first.Child, false); r.To != 1 || member(t, r.Msg, "id") != "101" {
		t.Errorf("the child's answer went to %d as %s", r.To, r.Msg)
	}
	for _, s := range []SessionID{2, 3} {
		if st := subscribe(t, x, s, "subscribe", "file:///a"); st.Child != nil {
			t.Errorf("session %d's subscribe of a URI the child holds went to it: %s", s, st.Child)
		}
	}
	if st := subscribe(t, x, 1, "subscribe", "file:///a"); st.Child != nil {
		t.Errorf("session 1's second subscribe went to the child: %s", st.Child)
	}
	other := subscribe(t, x, 4, "subscribe", "file:///b")
	if other.Child == nil {
		t.Fatal("the first subscribe of file:///b did not go to the child")
	}
	answer(t, x, other.Child, false)
	if got := updatedTo(t, x, "file:///a"); !slices.Equal(got, []SessionID{1, 2, 3}) {
		t.Errorf("the update of file:///a went to %v, want 1, 2, 3", got)
	}
	if got := updatedTo(t, x, "file:///b"); !slices.Equal(got, []SessionID{4}) {
		t.Errorf("the update of file:///b went to %v, want 4", got)
	}
	if got := updatedTo(t, x, "file:///c"); got != nil {
		t.Errorf("the update of an unsubscribed URI went to %v", got)
	}
	if st := subscribe(t, x, 1, "unsubscribe", "file:///a"); st.Child != nil {
		t.Errorf("an unsubscribe while 2 and 3 hold the URI went to the child: %s", st.Child)
	}
	if got := updatedTo(t, x, "file:///a"); !slices.Equal(got, []SessionID{2, 3}) {
		t.Errorf("after 1 unsubscribed, the update went to %v, want 2, 3", got)
	}
	if out := x.Forget(2); len(out) != 0 {
		t.Errorf("session 2 ended while 3 holds the URI: %q went to the child", out)
	}
	last := subscribe(t, x, 3, "unsubscribe", "file:///a")
	if last.Child == nil || member(t, last.Child, "method") != `"resources/unsubscribe"` {
		t.Fatalf("the last unsubscribe did not go to the child: %+v", last)
	}
	if r := answer(t, x, last.Child, false); r.To != 3 {
		t.Errorf("the answer to the last unsubscribe went to %d", r.To)
	}
	if got := updatedTo(t, x, "file:///a"); got != nil {
		t.Errorf("an update after the last unsubscribe went to %v", got)
	}
	out := x.Forget(4) // the last holder of file:///b ends
	if len(out) != 1 || member(t, out[0], "method") != `"resources/unsubscribe"` || member(t, out[0], "params", "uri") != `"file:///b"` {
		t.Fatalf("session 4 ended holding file:///b alone: %q to the child, want its unsubscribe", out)
	}
	if r := answer(t, x, out[0], false); r.Msg != nil {
		t.Errorf("the answer to the mux's own unsubscribe went to session %d: %s", r.To, r.Msg)
	}
	if again := subscribe(t, x, 5, "subscribe", "file:///b"); again.Child == nil {
		t.Error("a subscribe after the child's unsubscribe was not sent to it")
	}
}

// TestMuxSubscriptionRefused: a subscribe the child refuses counts for
// nobody, so the next session's goes to the child again; an update of a
// sub-resource reaches the subscribers of the resource above it.
func TestMuxSubscriptionRefused(t *testing.T) {
	x := NewMux()
	st := subscribe(t, x, 1, "subscribe", "file:///dir")
	if r := answer(t, x, st.Child, true); member(t, r.Msg, "error", "code") != "-32602" || r.To != 1 {
		t.Fatalf("the child's refusal went to %d as %s", r.To, r.Msg)
	}
	again := subscribe(t, x, 2, "subscribe", "file:///dir")
	if again.Child == nil {
		t.Fatal("after the child refused, the next subscribe was answered by the mux")
	}
	answer(t, x, again.Child, false)
	if got := updatedTo(t, x, "file:///dir/x.txt"); !slices.Equal(got, []SessionID{2}) {
		t.Errorf("the update of a sub-resource went to %v, want 2", got)
	}
	if got := updatedTo(t, x, "file:///dirt"); got != nil {
		t.Errorf("the update of file:///dirt went to %v: not below file:///dir", got)
	}
	x.Lost()
	if again := subscribe(t, x, 3, "subscribe", "file:///dir"); again.Child == nil {
		t.Error("after the child was lost, a subscribe was answered from the old count")
	}
}

// BenchmarkMuxCall is the mux's hot step: a client's call in (id and
// progress token rewritten) and the child's answer out (restored).
func BenchmarkMuxCall(b *testing.B) {
	x := NewMux()
	call := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello"},"_meta":{"progressToken":"t"}}}`)
	var reply []byte
	b.ReportAllocs()
	for i := int64(1); b.Loop(); i++ {
		st, err := x.FromClient(SessionID(i%8+1), call)
		if err != nil || st.Child == nil {
			b.Fatal(st, err)
		}
		reply = append(strconv.AppendInt(append(reply[:0], `{"jsonrpc":"2.0","id":`...), i, 10), `,"result":{"content":[{"type":"text","text":"hello"}]}}`...)
		r, err := x.FromChild(reply)
		if err != nil || r.Msg == nil {
			b.Fatal(r, err)
		}
	}
}

package stdio

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
)

// muxSeeds are conversations between clients and a child, one message a
// line: "1".."3" and the message a session sends, "c" and the message
// the child writes.
var muxSeeds = []string{
	`1{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","_meta":{"progressToken":"t"}}}
2{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":7},"name":"slow"}}
c{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":2,"progress":1}}
c{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1,"progressToken":1,"message":"<half>"}}
c{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"a & b"}]}}
c{"result":{},"id":1,"jsonrpc":"2.0"}`,
	`1 {"jsonrpc" : "2.0", "id" : "x", "method" : "tools/call", "params" : {"name":"a"}} 
1{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"x","reason":"bored"}}
2{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"x"}}
1{"jsonrpc":"2.0","method":"notifications/initialized"}
c{"jsonrpc":"2.0","id":1.0,"result":{}}`,
	`1{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask"}}
c{"jsonrpc":"2.0","id":"s1","method":"elicitation/create","params":{}}
c{"jsonrpc":"2.0","id":8,"method":"ping"}
2{"jsonrpc":"2.0","id":"s1","result":{}}
1{"jsonrpc":"2.0","id":"s1","result":{"action":"accept"}}
c{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"s1"}}
c{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}
c{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
	`1{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"file:///dir"}}
2{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"file:///dir"}}
c{"jsonrpc":"2.0","id":1,"result":{}}
c{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///dir/a"}}
1{"jsonrpc":"2.0","id":2,"method":"resources/unsubscribe","params":{"uri":"file:///dir"}}
3{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"file:///x"}}
c{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"no"}}`,
	`1{"jsonrpc":"2.0","\u0069d":{"a":1},"method":"tools/call","params":{"_meta":{"progressToken":null}}}
1{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}}
1{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}
2[{"jsonrpc":"2.0","id":1,"method":"ping"}]
c{"jsonrpc":"2.0","id":1,"result":{},"id":1}
cServer started
1null`,
}

// FuzzMuxInPlace holds the mux, which reads a message with one strict
// scan and rewrites its id and progress token in place, to the mux that
// decoded every message into a map and encoded it again (refMux): over
// any conversation, the same messages go to the same sessions and to the
// child, the same bytes once both are spelt canonically, and the same
// calls stay in flight. Where they part, it is by design: the in-place
// mux refuses a message that names a member twice (the other kept the
// last spelling, where a child's reader may keep the first; a member it
// does not read, in which an object names one twice, it passes on as it
// came, as a proxy passes on a body), and reads
// params members by their exact names (encoding/json matched "URI" for
// "uri"); the conversation stops there.
func FuzzMuxInPlace(f *testing.F) {
	for _, s := range muxSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, conversation string) {
		x, ref := NewMux(), refMux{NewMux()}
		for line := range strings.SplitSeq(conversation, "\n") {
			if len(line) >= 2 && !sameStep(t, x, ref, line[0], []byte(line[1:])) {
				return // parted by design: their states differ from here on
			}
		}
		for s := SessionID(1); s <= 3; s++ {
			if x.InFlight(s) != ref.InFlight(s) {
				t.Fatalf("session %d: %d calls in flight, %d by decoding", s, x.InFlight(s), ref.InFlight(s))
			}
		}
		if got, want := lostOf(x), lostOf(ref.Mux); !slices.Equal(got, want) {
			t.Fatalf("lost %q, %q by decoding", got, want)
		}
	})
}

// sameStep takes one message through both muxes and fails t where they
// part; it reports false where they part by design.
func sameStep(t *testing.T, x *Mux, ref refMux, op byte, msg []byte) bool {
	t.Helper()
	var got, want []string
	var err, refErr error
	switch {
	case op >= '1' && op <= '3':
		var st, rst Step
		st, err = x.FromClient(SessionID(op-'0'), msg)
		rst, refErr = ref.FromClient(SessionID(op-'0'), msg)
		got, want = stepOf(t, st), stepOf(t, rst)
	case op == 'c':
		var r, rr Route
		r, err = x.FromChild(msg)
		rr, refErr = ref.FromChild(msg)
		got, want = routeOf(t, r), routeOf(t, rr)
	default:
		return true
	}
	switch {
	case refErr != nil && err == nil:
		t.Fatalf("%s: went on as %q; decoding refused it: %v", msg, got, refErr)
	case refErr == nil && err != nil:
		if !errors.Is(err, mcpmsg.ErrDuplicateMember) || !namesTwice(msg) {
			t.Fatalf("%s: refused (%v); decoding took it as %q", msg, err, want)
		}
		return false
	case refErr != nil:
		return true
	case foldedName(msg):
		return false
	}
	if !slices.Equal(got, want) {
		if namesTwice(msg) {
			return false // a member the mux passes on as it came names one twice; decoding kept the last
		}
		t.Fatalf("%s:\n in place %q\n decoding %q", msg, got, want)
	}
	return true
}

func stepOf(t *testing.T, st Step) []string {
	return []string{canon(t, st.Child), canon(t, st.Answer)}
}

func routeOf(t *testing.T, r Route) []string {
	to := slices.Clone(r.Sessions)
	slices.Sort(to)
	return []string{fmt.Sprint(r.To, to, r.Broadcast, r.Alone), canon(t, r.Msg), canon(t, r.Reply)}
}

func lostOf(x *Mux) []string {
	var out []string
	for _, p := range x.Lost() {
		out = append(out, fmt.Sprintf("%d %s", p.Session, p.ID))
	}
	slices.Sort(out)
	return out
}

// canon spells a message one way: members sorted, strings escaped alike,
// no space (mcpmsg.Canonical); one with a string that is not Unicode as
// encoding/json decodes it (U+FFFD). nil stays "<nil>".
func canon(t *testing.T, msg []byte) string {
	t.Helper()
	if msg == nil {
		return "<nil>"
	}
	if c, err := mcpmsg.Canonical(msg); err == nil {
		return string(c)
	}
	d := json.NewDecoder(bytes.NewReader(msg))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("a message that is not JSON: %q", msg)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// namesTwice reports whether an object anywhere in msg names a member
// twice.
func namesTwice(msg []byte) bool {
	twice := false
	walkKeys(msg, func(keys []string) {
		seen := map[string]bool{}
		for _, k := range keys {
			twice = twice || seen[k]
			seen[k] = true
		}
	})
	return twice
}

// foldedName reports whether an object in msg has a member that
// encoding/json's case-insensitive match took for one the mux reads in
// params, under another spelling.
func foldedName(msg []byte) bool {
	folded := false
	walkKeys(msg, func(keys []string) {
		for _, k := range keys {
			for _, name := range []string{"progressToken", "requestId", "uri"} {
				folded = folded || k != name && strings.EqualFold(k, name)
			}
		}
	})
	return folded
}

// walkKeys calls fn with the keys of each object in msg, an object in
// another before the other.
func walkKeys(msg []byte, fn func(keys []string)) {
	d := json.NewDecoder(bytes.NewReader(msg))
	var stack [][]string
	var inObject []bool // per open container: an object, whose next string is a key
	expectKey := false
	for {
		tok, err := d.Token()
		if err == io.EOF || err != nil {
			return
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				stack = append(stack, nil)
				inObject = append(inObject, true)
				expectKey = true
				continue
			case '[':
				inObject = append(inObject, false)
			case '}':
				fn(stack[len(stack)-1])
				stack = stack[:len(stack)-1]
				inObject = inObject[:len(inObject)-1]
			case ']':
				inObject = inObject[:len(inObject)-1]
			}
		case string:
			if expectKey {
				stack[len(stack)-1] = append(stack[len(stack)-1], v)
				expectKey = false
				continue
			}
		}
		expectKey = len(inObject) > 0 && inObject[len(inObject)-1]
	}
}

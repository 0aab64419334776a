package gateway

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
	"github.com/mcpfleet/mcpfleet/internal/sse"
)

// lostAnswer is a replica_lost error response as a client decodes it.
type lostAnswer struct {
	ID    json.RawMessage `json:"id"`
	Error struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    struct {
			Reason     string `json:"reason"`
			Replica    string `json:"replica"`
			MayHaveRun *bool  `json:"may_have_run"`
		} `json:"data"`
	} `json:"error"`
}

// TestReplicaLostError: the error names the reason, the replica (escaped as
// JSON), and whether the call may have run, with -32603 and 502.
func TestReplicaLostError(t *testing.T) {
	for _, tt := range []struct {
		replica string
		may     bool
	}{{"replica-a", true}, {`odd "name"`, false}} {
		e := replicaLost(tt.replica, tt.may)
		if e.Status != 502 || e.Code != mcpmsg.CodeInternalError {
			t.Errorf("status %d code %d, want 502 -32603", e.Status, e.Code)
		}
		var a lostAnswer
		if err := json.Unmarshal(e.AppendResponse(nil, []byte(`"x"`)), &a); err != nil {
			t.Fatalf("%s: %v", tt.replica, err)
		}
		d := a.Error.Data
		if d.Reason != "replica_lost" || d.Replica != tt.replica || d.MayHaveRun == nil || *d.MayHaveRun != tt.may || string(a.ID) != `"x"` {
			t.Errorf("%s, %v: answer %+v", tt.replica, tt.may, a)
		}
	}
}

// TestLostBody: one response for a request, an array with one response
// per request for a batch, and a null id when there is no request.
func TestLostBody(t *testing.T) {
	e := replicaLost("r", true)
	ids := func(b []byte) []string {
		var one lostAnswer
		if json.Unmarshal(b, &one) == nil {
			return []string{string(one.ID)}
		}
		var many []lostAnswer
		if err := json.Unmarshal(b, &many); err != nil {
			t.Fatalf("not JSON: %q", b)
		}
		var out []string
		for _, a := range many {
			if a.Error.Data.Reason != "replica_lost" {
				t.Errorf("element %+v", a)
			}
			out = append(out, string(a.ID))
		}
		return out
	}
	for _, tt := range []struct {
		name  string
		ids   [][]byte
		batch bool
		want  []string
	}{
		{"one", [][]byte{[]byte("7")}, false, []string{"7"}},
		{"batch", [][]byte{[]byte("1"), []byte(`"b"`)}, true, []string{"1", `"b"`}},
		{"no request", nil, false, []string{"null"}},
		{"batch of notifications", nil, true, []string{"null"}},
	} {
		if diff := cmp.Diff(tt.want, ids(lostBody(e, tt.ids, tt.batch))); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}

// TestLostEvents: each id gets a message event whose data is its error.
func TestLostEvents(t *testing.T) {
	evs := lostEvents(replicaLost("r", true), [][]byte{[]byte("1"), []byte("2")})
	if len(evs) != 2 {
		t.Fatalf("%d events", len(evs))
	}
	for i, ev := range evs {
		var a lostAnswer
		p := sse.Parse(ev)
		if err := json.Unmarshal(p.Data, &a); err != nil || p.Type != "message" || a.Error.Data.Reason != "replica_lost" {
			t.Errorf("event %d %q: %v", i, ev, err)
		}
		if want := []string{"1", "2"}[i]; string(a.ID) != want {
			t.Errorf("event %d answers %s, want %s", i, a.ID, want)
		}
	}
}

// TestCallsFollowAnswers: an event with a request's response ends its
// wait, a batch of responses ends each, and notifications, other ids and
// requests end none.
func TestCallsFollowAnswers(t *testing.T) {
	c := &calls{ids: [][]byte{[]byte("1"), []byte(`"two"`), []byte("3"), []byte("4")}}
	for _, data := range []string{
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`,
		`{"jsonrpc":"2.0","id":9,"result":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{"note":"\"result\""}}`,
		`{"jsonrpc":"2.0","id":1.0,"result":{}}`,
		`[{"jsonrpc":"2.0","id":"two","error":{"code":1,"message":"x"}},{"jsonrpc":"2.0","id":3,"result":{}}]`,
	} {
		c.see(jsonEvent([]byte(data)))
	}
	if diff := cmp.Diff([][]byte{[]byte("4")}, c.take()); diff != "" {
		t.Errorf("waiting after the events (-want +got):\n%s", diff)
	}
	if c.waiting() {
		t.Error("take left calls waiting")
	}
}

// TestCallsBound: a stream follows at most maxCalls calls.
func TestCallsBound(t *testing.T) {
	c := &calls{}
	for i := range maxCalls {
		if !c.add([]byte{'0' + byte(i%10)}) {
			t.Fatalf("add %d refused", i)
		}
	}
	if c.add([]byte("1")) {
		t.Error("a call past maxCalls was followed")
	}
	c.drop([]byte("1"))
	if !c.add([]byte("1")) {
		t.Error("no room after a drop")
	}
}

// TestSameID: ids are the same bytes, or numbers of one value; a string
// is never a number.
func TestSameID(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want bool
	}{
		{"1", "1", true}, {"1", "1.0", true}, {"1e0", "1", true}, {`"1"`, "1", false},
		{`"a"`, `"a"`, true}, {"2", "1", false}, {"", "1", false},
	} {
		if got := sameID([]byte(tt.a), []byte(tt.b)); got != tt.want {
			t.Errorf("sameID(%s, %s) = %v", tt.a, tt.b, got)
		}
	}
}

// TestRequestIDs: a request's id, a batch's requests' ids, none for a
// notification.
func TestRequestIDs(t *testing.T) {
	one := &request{msg: mcpmsg.Message{Kind: mcpmsg.KindRequest, ID: []byte("5")}}
	batch := &request{msg: mcpmsg.Message{Kind: mcpmsg.KindRequest, Batch: true}, batch: []mcpmsg.Message{
		{Kind: mcpmsg.KindRequest, ID: []byte("1")}, {Kind: mcpmsg.KindNotification}, {Kind: mcpmsg.KindRequest, ID: []byte("2")},
	}}
	note := &request{msg: mcpmsg.Message{Kind: mcpmsg.KindNotification}}
	for _, tt := range []struct {
		q    *request
		want [][]byte
	}{{one, [][]byte{[]byte("5")}}, {batch, [][]byte{[]byte("1"), []byte("2")}}, {note, nil}, {nil, nil}} {
		if diff := cmp.Diff(tt.want, requestIDs(tt.q)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	}
}

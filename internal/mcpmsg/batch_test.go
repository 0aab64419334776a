package mcpmsg

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// hostileBatches are batches a caller may send to walk past the limits, or
// to make the gateway work: each is refused, or split exactly.
var hostileBatches = []string{
	`[]`,
	`[ ]`,
	`[[]]`,
	`[[{"jsonrpc":"2.0","id":1,"method":"ping"}]]`,
	`[{"jsonrpc":"2.0","id":1,"method":"ping"},[{"jsonrpc":"2.0","id":2,"method":"ping"}]]`,
	`[1]`,
	`[null]`,
	`["x"]`,
	`[{"jsonrpc":"2.0","id":1,"method":"ping"},]`,
	`[{"jsonrpc":"2.0","id":1,"method":"ping"}`,
	`[{"jsonrpc":"2.0","id":1,"method":"ping"}] []`,
	`[{"jsonrpc":"1.0","id":1,"method":"ping"}]`,
	`[{}]`,
	`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"mutate"}}]`,
	"[" + strings.Repeat(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mutate"}},`, 9999) + `{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
	strings.Repeat("[", 600) + strings.Repeat("]", 600),
}

func TestSplitBatch(t *testing.T) {
	tests := []struct {
		body string
		max  int
		want []string // the methods, in order
		err  error
	}{
		{body: hostileBatches[0], err: ErrInvalidRequest},
		{body: hostileBatches[2], err: ErrInvalidRequest},
		{body: hostileBatches[3], err: ErrInvalidRequest},
		{body: hostileBatches[4], err: ErrInvalidRequest},
		{body: hostileBatches[5], err: ErrInvalidRequest},
		{body: hostileBatches[6], err: ErrInvalidRequest},
		{body: hostileBatches[8], err: ErrParse},
		{body: hostileBatches[9], err: ErrParse},
		{body: hostileBatches[10], err: ErrParse},
		{body: hostileBatches[11], err: ErrInvalidRequest},
		{body: hostileBatches[12], err: ErrInvalidRequest},
		{body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, err: ErrInvalidRequest},
		{body: hostileBatches[13], max: 16, want: []string{"ping", "tools/call"}},
		{body: hostileBatches[13], max: 1, err: ErrBatchTooLarge},
		{body: hostileBatches[14], max: 16, err: ErrBatchTooLarge},
		{body: hostileBatches[15], err: ErrParse}, // deeper than the scanner goes
	}
	for _, tt := range tests {
		name := tt.body
		if len(name) > 40 {
			name = name[:40]
		}
		t.Run(name, func(t *testing.T) {
			msgs, err := SplitBatch([]byte(tt.body), tt.max)
			if !errors.Is(err, tt.err) {
				t.Fatalf("error %v, want %v", err, tt.err)
			}
			var got []string
			for _, m := range msgs {
				got = append(got, m.Method)
				if m.Batch || m.Count != 1 {
					t.Errorf("element %q: batch %v count %d, want a message alone", m.Method, m.Batch, m.Count)
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("methods %v, want %v", got, tt.want)
			}
		})
	}
	msgs, err := SplitBatch([]byte(hostileBatches[13]), 0)
	if err != nil || msgs[1].Name != "mutate" || string(msgs[1].ID) != "2" || msgs[1].Kind != KindRequest {
		t.Fatalf("split %+v, %v: want the second a tools/call of mutate with id 2", msgs, err)
	}
}

// FuzzSplitBatch checks the batch splitter against encoding/json: what it
// accepts is a JSON array of objects, one message for each, with the
// members a full decode sees, and Parse counts as many.
func FuzzSplitBatch(f *testing.F) {
	for _, s := range hostileBatches {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		msgs, err := SplitBatch(body, 0)
		if err != nil {
			return
		}
		var elems []map[string]json.RawMessage
		if err := json.Unmarshal(body, &elems); err != nil {
			t.Fatalf("SplitBatch accepted %q, which is no array of objects to encoding/json: %v", body, err)
		}
		if len(elems) != len(msgs) || len(msgs) == 0 {
			t.Fatalf("%d messages from %q, encoding/json sees %d", len(msgs), body, len(elems))
		}
		for i, m := range msgs {
			var method string
			_ = json.Unmarshal(elems[i]["method"], &method)
			if m.Method != method || m.ID != nil && string(m.ID) != string(elems[i]["id"]) {
				t.Errorf("element %d: method %q id %s, encoding/json says %q %s", i, m.Method, m.ID, method, elems[i]["id"])
			}
		}
		if p, err := Parse(body); err != nil || !p.Batch || p.Count != len(msgs) {
			t.Errorf("Parse of an accepted batch: %+v, %v; want a batch of %d", p, err, len(msgs))
		}
	})
}

package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// callRaw posts a tools/call and returns its status, Content-Type and body.
func callRaw(t *testing.T, r *raw, id int, name string, args map[string]any, hdr map[string]string) (int, string, string) {
	t.Helper()
	resp := r.post(context.Background(), id, "tools/call", map[string]any{"name": name, "arguments": args}, hdr)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

// TestReusedIDGetsItsOwnAnswer: a 2025-11-25 client that sends id 1 on
// every request (the base protocol forbids it; clients do it) gets each
// call's own answer, counted and logged once; a true re-send, which differs
// only in _meta, still runs once; a call that reuses the id after another
// call is a new call.
func TestReusedIDGetsItsOwnAnswer(t *testing.T) {
	f := startFleet(t, 2, nil)
	r := newRaw(t, f.url(), "2025-11-25")
	r.initialize()
	calls := []struct {
		name string
		args map[string]any
		want string
	}{
		{"echo", map[string]any{"text": "first"}, `"text":"first"`},
		{"whoami", nil, `"text":"replica-`},
		{"echo", map[string]any{"text": "second"}, `"text":"second"`},
		{"lookup", map[string]any{"key": "k1"}, `value of k1 from`},
		{"mutate", map[string]any{"key": "m1", "seconds": 0}, `mutated m1 on`},
		{"count", map[string]any{"key": "m1"}, `"text":"1"`},
		{"fetch", map[string]any{"key": "k2"}, `value of k2 from`},
		{"echo", map[string]any{"text": "third"}, `"text":"third"`},
		{"mutate", map[string]any{"key": "m2", "seconds": 0}, `mutated m2 on`},
		{"sleep", map[string]any{"seconds": 0.01}, `slept 0.01s on`},
	}
	for i, c := range calls {
		code, _, body := callRaw(t, r, 1, c.name, c.args, nil)
		if code != http.StatusOK || !strings.Contains(body, c.want) || !strings.Contains(body, `"id":1`) {
			t.Errorf("call %d (%s) with id 1: %d %s; want %s", i, c.name, code, body, c.want)
		}
	}
	if got := testutil.ToFloat64(f.gw.metrics.idReused); got != float64(len(calls)-1) {
		t.Errorf("mcpfleet_jsonrpc_id_reused_total = %v, want %d", got, len(calls)-1)
	}
	if n := strings.Count(f.logs.String(), "reused a JSON-RPC id"); n != 1 {
		t.Errorf("the reuse was logged %d times, want once per session:\n%s", n, f.logs.String())
	}

	// A true re-send of the last call (its _meta may differ: a new progress
	// token) runs once; the same call after another one on that id runs again.
	resend := mutateArgs("m3", 0)
	if code, body := readAllClose(t, r, 1, resend, nil); code != 200 || !strings.Contains(body, "mutated m3") {
		t.Fatalf("mutate m3: %d %s", code, body)
	}
	resend["_meta"] = map[string]any{"progressToken": 99}
	if code, body := readAllClose(t, r, 1, resend, nil); code != 200 || !strings.Contains(body, "mutated m3") {
		t.Fatalf("re-send of mutate m3: %d %s", code, body)
	}
	if got := f.count("m3"); got != 1 {
		t.Errorf("a re-send of id 1 ran again: %d mutations of m3", got)
	}
	callRaw(t, r, 1, "whoami", nil, nil)
	readAllClose(t, r, 1, mutateArgs("m3", 0), nil)
	if got := f.count("m3"); got != 2 {
		t.Errorf("mutate m3 sent again after another call on id 1: %d mutations, want 2", got)
	}
}

// TestIdempotencyKeyReusedWithOtherArguments: a key reused with another
// payload is refused (422, -32602, idempotency_key_reused) and never runs;
// the same payload gets the first answer.
func TestIdempotencyKeyReusedWithOtherArguments(t *testing.T) {
	f := startFleet(t, 2, nil)
	r := newRaw(t, f.url(), "2026-07-28")
	hdr := map[string]string{"Authorization": "Bearer erin", "Idempotency-Key": "k1"}
	code, first := readAllClose(t, r, 1, mutateArgs("a", 0), hdr)
	if code != 200 || !strings.Contains(first, "mutated a on") || resultOf(first) == "" {
		t.Fatalf("first call: %d %s", code, first)
	}
	code, body := readAllClose(t, r, 2, mutateArgs("b", 0), hdr)
	if code != http.StatusUnprocessableEntity || !strings.Contains(body, `"code":-32602`) ||
		!strings.Contains(body, `"data":{"reason":"idempotency_key_reused"}`) || !strings.Contains(body, `"id":2`) {
		t.Errorf("k1 with other arguments: %d %s", code, body)
	}
	if got := f.count("b"); got != 0 {
		t.Errorf("the refused call ran: %d mutations of b", got)
	}
	code, again := readAllClose(t, r, 3, mutateArgs("a", 0), hdr)
	if code != 200 || !strings.Contains(again, `"id":3`) || resultOf(again) != resultOf(first) {
		t.Errorf("k1 with the same arguments: %d %s, want the first answer %s", code, again, first)
	}
	if got := f.count("a"); got != 1 {
		t.Errorf("k1 with the same arguments ran again: %d mutations of a", got)
	}
	if got := testutil.ToFloat64(f.gw.metrics.idempotency.WithLabelValues("key_reused")); got != 1 {
		t.Errorf(`mcpfleet_idempotency_total{outcome="key_reused"} = %v, want 1`, got)
	}
}

// resultOf returns the result member of the JSON-RPC response in a body,
// JSON or SSE; "" if there is none.
func resultOf(body string) string {
	msg := strings.TrimSpace(body)
	for _, line := range strings.Split(body, "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok && strings.HasPrefix(d, "{") {
			msg = d
		}
	}
	var m struct{ Result json.RawMessage }
	if json.Unmarshal([]byte(msg), &m) != nil {
		return ""
	}
	return string(m.Result)
}

// TestReplayKeepsFraming: a re-send gets the recorded answer the way the
// first came, SSE (the replica's stream, or the gateway's own early one)
// or JSON, unless it does not accept SSE.
func TestReplayKeepsFraming(t *testing.T) {
	f := startFleet(t, 1, &Options{KeepAlive: 100 * time.Millisecond})
	r := newRaw(t, f.url(), "2025-11-25")
	r.initialize()
	for i, seconds := range []float64{0, 0.4} { // 0.4 s: the gateway opens the stream early
		id := 10 + i
		code, ctype, first := callRaw(t, r, id, "mutate", map[string]any{"key": "f", "seconds": seconds}, nil)
		if code != 200 || !strings.Contains(first, "mutated f") || resultOf(first) == "" {
			t.Fatalf("first call %d: %d %s", id, code, first)
		}
		code, again, body := callRaw(t, r, id, "mutate", map[string]any{"key": "f", "seconds": seconds}, nil)
		if code != 200 || again != ctype || resultOf(body) != resultOf(first) {
			t.Errorf("re-send of %d: %d %q %s; want %q %s", id, code, again, body, ctype, first)
		}
		code, plain, body := callRaw(t, r, id, "mutate", map[string]any{"key": "f", "seconds": seconds}, map[string]string{"Accept": "application/json"})
		if code != 200 || plain != "application/json" || resultOf(body) != resultOf(first) {
			t.Errorf("re-send of %d accepting JSON only: %d %q %s", id, code, plain, body)
		}
		if i == 1 && !strings.HasPrefix(ctype, "text/event-stream") {
			t.Errorf("a 0.4 s call's answer came as %q, want the gateway's early SSE stream", ctype)
		}
	}
	if got := f.count("f"); got != 2 {
		t.Errorf("two calls and their re-sends mutated %d times, want 2", got)
	}
}

package gateway

import (
	"context"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/idem"
	"github.com/mcpfleet/mcpfleet/internal/store"
	"github.com/mcpfleet/mcpfleet/internal/store/redistest"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func mutateArgs(key string, seconds float64) map[string]any {
	return map[string]any{"name": "mutate", "arguments": map[string]any{"key": key, "seconds": seconds, "at": 0.5}}
}

func readAllClose(t *testing.T, r *raw, id int, params map[string]any, hdr map[string]string) (int, string) {
	t.Helper()
	resp := r.post(context.Background(), id, "tools/call", params, hdr)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(b)
}

// TestIdempotentCallRunsOnce: duplicates of a keyed call, concurrent and
// later, run it once; every duplicate gets the first's answer under its own
// id; another caller's same key is another call.
func TestIdempotentCallRunsOnce(t *testing.T) {
	f := startFleet(t, 3, nil)
	r := newRaw(t, f.url(), "2026-07-28")
	alice := map[string]string{"Authorization": "Bearer alice", "Idempotency-Key": "op-1"}
	var wg sync.WaitGroup
	answers := make([]string, 4)
	for i := range answers {
		wg.Go(func() {
			code, body := readAllClose(t, r, 100+i, mutateArgs("k", 0.6), alice)
			if code != 200 {
				t.Errorf("duplicate %d: status %d", i, code)
			}
			answers[i] = body
		})
	}
	wg.Wait()
	if got := f.count("k"); got != 1 {
		t.Fatalf("4 concurrent duplicates mutated %d times, want 1", got)
	}
	for i, a := range answers {
		if !strings.Contains(a, "mutated k on") || !strings.Contains(a, `"id":`+itoa(100+i)) {
			t.Errorf("duplicate %d answered %q", i, a)
		}
	}
	// Later, with the key in _meta instead of the header (_meta is not what
	// the call asks: the same call): the recorded answer.
	params := mutateArgs("k", 0.6)
	params["_meta"] = map[string]any{"io.mcpfleet/idempotency-key": "op-1"}
	if code, body := readAllClose(t, r, 200, params, map[string]string{"Authorization": "Bearer alice"}); code != 200 || !strings.Contains(body, `"id":200`) {
		t.Fatalf("later duplicate: %d %s", code, body)
	}
	if got := f.count("k"); got != 1 {
		t.Errorf("a later duplicate ran again: %d mutations", got)
	}
	if n := testutil.ToFloat64(f.gw.metrics.idempotency.WithLabelValues("replayed")); n < 1 {
		t.Errorf("replayed = %v", n)
	}
	// Another caller with the same key is another logical call: it reaches
	// a replica instead of getting alice's recorded answer. (The replica
	// itself may still recognise the key: the tool-side half.)
	replayed := testutil.ToFloat64(f.gw.metrics.idempotency.WithLabelValues("replayed"))
	code, body := readAllClose(t, r, 300, mutateArgs("k2", 0), map[string]string{"Authorization": "Bearer bob", "Idempotency-Key": "op-1"})
	if code != 200 || !strings.Contains(body, "mutated k2") {
		t.Errorf("bob's call with alice's key: %d %s", code, body)
	}
	if got := testutil.ToFloat64(f.gw.metrics.idempotency.WithLabelValues("replayed")); got != replayed {
		t.Errorf("bob got alice's recorded answer")
	}
}

// TestLegacyResendRunsOnce: a legacy client re-sending the same JSON-RPC id
// within its session gets the recorded answer; the call ran once.
func TestLegacyResendRunsOnce(t *testing.T) {
	f := startFleet(t, 2, nil)
	r := newRaw(t, f.url(), "2025-11-25")
	r.initialize()
	for range 3 {
		if code, body := readAllClose(t, r, 7, mutateArgs("L", 0), nil); code != 200 || !strings.Contains(body, "mutated L") {
			t.Fatalf("re-send: %d %s", code, body)
		}
	}
	if got := f.count("L"); got != 1 {
		t.Errorf("3 sends of id 7 mutated %d times, want 1", got)
	}
	readAllClose(t, r, 8, mutateArgs("L", 0), nil)
	if got := f.count("L"); got != 2 {
		t.Errorf("a new id did not run: %d mutations", got)
	}
}

// TestCancelledCallIsReleased: a 2026-07-28 call whose client drops it
// before it mutates leaves no record; the re-issue runs, once.
func TestCancelledCallIsReleased(t *testing.T) {
	f := startFleet(t, 3, &Options{KeepAlive: 200 * time.Millisecond})
	r := newRaw(t, f.url(), "2026-07-28")
	hdr := map[string]string{"Authorization": "Bearer carol", "Idempotency-Key": "op-c"}
	ctx, drop := context.WithCancel(context.Background())
	start := time.Now()
	// Its mutation is due at 1.5 s, which leaves the drop more than a
	// second to reach the replica on a loaded machine under the race
	// detector.
	resp := r.post(ctx, 1, "tools/call", mutateArgs("c", 3), hdr)
	time.Sleep(300 * time.Millisecond)
	drop()
	resp.Body.Close()
	time.Sleep(300 * time.Millisecond)
	if code, body := readAllClose(t, r, 2, mutateArgs("c", 0), hdr); code != 200 || !strings.Contains(body, "mutated c") {
		t.Fatalf("re-issue: %d %s", code, body)
	}
	time.Sleep(time.Until(start.Add(3500 * time.Millisecond))) // past the dropped call's end
	if got := f.count("c"); got != 1 {
		t.Errorf("cancelled call and its re-issue mutated %d times, want 1", got)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestIdempotencyAcrossGatewaysInRedis: two gateway processes sharing a real
// redis-server run a keyed call once: a duplicate sent to the other gateway,
// during and after the first, gets the first's answer.
func TestIdempotencyAcrossGatewaysInRedis(t *testing.T) {
	addr := redistest.Start(t)
	f := startFleet(t, 2, nil)
	var specs []upstream.Spec
	for i, hs := range f.replicas {
		specs = append(specs, upstream.Spec{Name: f.servers[i].Name(), URL: hs.URL + "/mcp"})
	}
	var fronts []string
	for range 2 {
		client, err := store.NewRedisClient("redis://" + addr + "/0")
		if err != nil {
			t.Fatal(err)
		}
		gw := startGatewayOn(t, specs, &Options{Idempotency: idem.NewRedis(client, "test:idem:", nil), RoutingSalt: []byte("shared-salt-0123456789")}, io.Discard)
		hs := newFront(gw)
		t.Cleanup(hs.Close)
		fronts = append(fronts, hs.URL+"/mcp")
	}
	hdr := map[string]string{"Authorization": "Bearer dave", "Idempotency-Key": "op-r"}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			r := newRaw(t, fronts[i%2], "2026-07-28")
			if code, body := readAllClose(t, r, i+1, mutateArgs("r", 0.5), hdr); code != 200 || !strings.Contains(body, "mutated r") {
				t.Errorf("duplicate %d: %d %s", i, code, body)
			}
		})
	}
	wg.Wait()
	if got := f.count("r"); got != 1 {
		t.Errorf("4 duplicates over two gateways mutated %d times, want 1", got)
	}
}

package gateway

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/limit"
	"github.com/mcpfleet/mcpfleet/internal/limit/redisstore"
	"github.com/mcpfleet/mcpfleet/internal/store"
	"github.com/mcpfleet/mcpfleet/internal/store/redistest"
	"github.com/mcpfleet/mcpfleet/internal/testproc"
	"github.com/mcpfleet/mcpfleet/internal/testserver"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// limitedFleet is n gateways in front of three testserver replicas that
// count the calls they run.
type limitedFleet struct {
	fronts []*frontServer
	gws    []*Gateway
	calls  *testserver.Gauge
	logs   *syncBuffer
}

// startLimited starts three replicas and one gateway per limiter.
func startLimited(t *testing.T, limiters ...*limit.Limiter) *limitedFleet {
	t.Helper()
	return startLimitedWith(t, Options{}, limiters...)
}

// startLimitedWith is startLimited with the gateways' other options.
func startLimitedWith(t *testing.T, opts Options, limiters ...*limit.Limiter) *limitedFleet {
	t.Helper()
	f := &limitedFleet{calls: &testserver.Gauge{}, logs: &syncBuffer{}}
	var specs []upstream.Spec
	for i := range 3 {
		name := fmt.Sprintf("replica-%c", 'a'+i)
		s, err := testserver.New(name, &testserver.Options{Calls: f.calls})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(s.Handler())
		t.Cleanup(hs.Close)
		specs = append(specs, upstream.Spec{Name: name, URL: hs.URL + "/mcp"})
	}
	for _, l := range limiters {
		t.Cleanup(l.Close)
		o := opts
		o.Limits, o.RoutingSalt = l, []byte("shared-salt-0123456789")
		gw := startGatewayOn(t, specs, &o, f.logs)
		front := newFront(gw)
		t.Cleanup(front.Close)
		f.gws, f.fronts = append(f.gws, gw), append(f.fronts, front)
	}
	return f
}

// limited is one answer as a limits test reads it.
type limited struct {
	status               int
	retryAfter           string
	rlLimit, rlRemaining string
	code                 int
	data                 struct {
		RetryAfterMs *int64 `json:"retryAfterMs"`
		Limit        *int   `json:"limit"`
		Remaining    *int   `json:"remaining"`
	}
	body string
}

// callTool posts one tools/call and reads the answer.
func callTool(t *testing.T, r *raw, id int, tool string, args map[string]any, hdr map[string]string) limited {
	t.Helper()
	resp := r.post(context.Background(), id, "tools/call", map[string]any{"name": tool, "arguments": args}, hdr)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	out := limited{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"),
		rlLimit: resp.Header.Get("RateLimit-Limit"), rlRemaining: resp.Header.Get("RateLimit-Remaining"), body: string(b)}
	if resp.StatusCode != http.StatusOK {
		var v struct {
			Error struct {
				Code int             `json:"code"`
				Data json.RawMessage `json:"data"`
			} `json:"error"`
		}
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("status %d with a body that is no JSON-RPC error: %q", resp.StatusCode, b)
		}
		out.code = v.Error.Code
		if len(v.Error.Data) > 0 {
			if err := json.Unmarshal(v.Error.Data, &out.data); err != nil {
				t.Fatalf("error data %s: %v", v.Error.Data, err)
			}
		}
	}
	return out
}

// wantRateLimited checks a refusal has SEP-3304's shape.
func wantRateLimited(t *testing.T, got limited, limitV int) {
	t.Helper()
	if got.status != http.StatusTooManyRequests || got.code != -32023 {
		t.Fatalf("refusal: status %d code %d, want 429 and -32023 (%s)", got.status, got.code, got.body)
	}
	d := got.data
	if d.RetryAfterMs == nil || *d.RetryAfterMs <= 0 || d.Limit == nil || *d.Limit != limitV || d.Remaining == nil || *d.Remaining != 0 {
		t.Fatalf("refusal data %s: want retryAfterMs > 0, limit %d, remaining 0", got.body, limitV)
	}
	secs := (*d.RetryAfterMs + 999) / 1000
	if got.retryAfter != fmt.Sprint(secs) || got.rlLimit != fmt.Sprint(limitV) || got.rlRemaining != "0" {
		t.Fatalf("refusal headers Retry-After %q RateLimit-Limit %q RateLimit-Remaining %q, want %d, %d, 0",
			got.retryAfter, got.rlLimit, got.rlRemaining, secs, limitV)
	}
}

func TestLimitRefusalShapeInBothEras(t *testing.T) {
	for _, era := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(era, func(t *testing.T) {
			f := startLimited(t, limit.NewLimiter(limit.NewMemory(0), &limit.Options{Rate: 0.5, Burst: 1}))
			r := newRaw(t, f.fronts[0].URL+"/mcp", era)
			if era == "2025-11-25" {
				r.initialize() // not governed: initialize spends nothing
			}
			tok := map[string]string{"Authorization": "Bearer alice"}
			if got := callTool(t, r, 2, "echo", map[string]any{"text": "hi"}, tok); got.status != 200 {
				t.Fatalf("first call: %d %s", got.status, got.body)
			}
			wantRateLimited(t, callTool(t, r, 3, "echo", map[string]any{"text": "hi"}, tok), 1)
			// Not governed by default: tools/list goes through.
			resp := r.post(context.Background(), 4, "tools/list", nil, tok)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("tools/list: %d", resp.StatusCode)
			}
			// Another caller has its own bucket.
			if got := callTool(t, r, 5, "echo", map[string]any{"text": "hi"}, map[string]string{"Authorization": "Bearer bob"}); got.status != 200 {
				t.Fatalf("bob: %d %s", got.status, got.body)
			}
			m := f.gws[0].metrics
			if n := testutil.ToFloat64(m.limitDecisions.WithLabelValues("refused", "rate")); n != 1 {
				t.Errorf("refused rate = %v, want 1", n)
			}
			if n := testutil.ToFloat64(m.limitDecisions.WithLabelValues("admitted", "none")); n != 2 {
				t.Errorf("admitted = %v, want 2", n)
			}
			if logs := f.logs.String(); !strings.Contains(logs, `"limit":"rate"`) || !strings.Contains(logs, `"limit":"admitted"`) {
				t.Errorf("access log does not name the limit:\n%s", logs)
			}
		})
	}
}

// loops runs n goroutines calling sleep 0.2 s through the fronts in turn,
// as one caller, for d; it returns how many calls were answered 200.
func loops(t *testing.T, f *limitedFleet, n int, d time.Duration, token func(i int) string) (admitted int64) {
	t.Helper()
	return timedLoops(t, f, n, d, token).admitted
}

// loadRun is what timedLoops saw: the calls answered 200 and the mean
// time each took, from request to answer.
type loadRun struct {
	admitted int64
	mean     time.Duration
}

// reach is the most calls a run of d could have admitted under limits of
// rate, burst and concurrency, in stores separate stores, given how long
// its calls took: the rate's budget, or what the concurrency slots could
// hold of calls that slow, whichever is fewer.
func (r loadRun) reach(rate float64, burst, concurrency, stores int, d time.Duration) float64 {
	budget := float64(stores) * (float64(burst) + rate*d.Seconds())
	if r.mean <= 0 {
		return budget
	}
	return min(budget, float64(stores*concurrency)*d.Seconds()/r.mean.Seconds())
}

// timedLoops is loops, and times the admitted calls.
func timedLoops(t *testing.T, f *limitedFleet, n int, d time.Duration, token func(i int) string) loadRun {
	t.Helper()
	var ok, took atomic.Int64
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for i := range n {
		r := newRaw(t, f.fronts[i%len(f.fronts)].URL+"/mcp", "2026-07-28")
		r.client = http.DefaultClient
		wg.Go(func() {
			for id := 1; time.Now().Before(deadline); id++ {
				start := time.Now()
				got := callTool(t, r, id, "sleep", map[string]any{"seconds": 0.2}, map[string]string{"Authorization": "Bearer " + token(i)})
				switch got.status {
				case 200:
					ok.Add(1)
					took.Add(int64(time.Since(start)))
				case 429:
					if got.code != -32023 || got.data.RetryAfterMs == nil || got.retryAfter == "" {
						t.Errorf("refusal without SEP-3304's shape: %s", got.body)
						return
					}
					time.Sleep(time.Duration(*got.data.RetryAfterMs) * time.Millisecond)
				default:
					t.Errorf("status %d: %s", got.status, got.body)
					return
				}
			}
		})
	}
	wg.Wait()
	run := loadRun{admitted: ok.Load()}
	if run.admitted > 0 {
		run.mean = time.Duration(took.Load() / run.admitted)
	}
	return run
}

func redisLimiters(t *testing.T, addr string, n int, opts limit.Options) []*limit.Limiter {
	t.Helper()
	var ls []*limit.Limiter
	for range n {
		client, err := store.NewRedisClient("redis://" + addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { client.Close() })
		ls = append(ls, limit.NewLimiter(redisstore.New(client, "test:"+t.Name()+":"), &opts))
	}
	return ls
}

// TestLimitsHoldAcrossGateways: one caller through three gateways sharing
// Redis gets its limits once; through three with memory stores, three times.
func TestLimitsHoldAcrossGateways(t *testing.T) {
	if testing.Short() {
		t.Skip("runs load for seconds")
	}
	opts := limit.Options{Rate: 5, Burst: 5, Concurrency: 2}
	const d = 3 * time.Second
	alice := func(int) string { return "alice" }

	shared := startLimited(t, redisLimiters(t, redistest.Start(t), 3, opts)...)
	run := timedLoops(t, shared, 16, d, alice)
	got := run.admitted
	// 5 at once, then 5 a second: 20 in 3 s, and a call that began by the
	// deadline may end after it. That is the point, and holds however
	// slow the calls.
	if got > 21 {
		t.Errorf("shared store admitted %d calls in %v, want at most 21", got, d)
	}
	// At least 0.6 of what the limits let through, 12 of 20 with calls of
	// 0.2 s; on a loaded machine slower calls fill the two slots sooner.
	reach := run.reach(opts.Rate, opts.Burst, opts.Concurrency, 1, d)
	if float64(got) < 0.6*reach {
		t.Errorf("shared store admitted %d calls in %v, want at least 0.6 of the %.1f its limits let through calls of %v", got, d, reach, run.mean)
	}
	if p := shared.calls.Peak("sleep"); p > 2 {
		t.Errorf("shared store: %d calls of one caller ran at once at the replicas, want at most 2", p)
	}
	t.Logf("shared: admitted %d of %.1f reachable, calls of %v, peak %d", got, reach, run.mean.Round(time.Millisecond), shared.calls.Peak("sleep"))

	var ls []*limit.Limiter
	for range 3 {
		ls = append(ls, limit.NewLimiter(limit.NewMemory(0), &opts))
	}
	local := startLimited(t, ls...)
	runLocal := timedLoops(t, local, 16, d, alice)
	gotLocal := runLocal.admitted
	reachLocal := runLocal.reach(opts.Rate, opts.Burst, opts.Concurrency, 3, d)
	t.Logf("local: admitted %d of %.1f reachable, calls of %v, peak %d", gotLocal, reachLocal, runLocal.mean.Round(time.Millisecond), local.calls.Peak("sleep"))
	// Three budgets admit twice what one did; when the calls were too slow
	// for the budgets to bind, at least 0.6 of what six slots held, as
	// long as that is well over what one budget admitted.
	want := 2 * float64(got)
	if reachLocal < (loadRun{}).reach(opts.Rate, opts.Burst, opts.Concurrency, 3, d) {
		want = min(want, 0.6*reachLocal)
		if want < 1.5*float64(got) {
			if gotLocal < got {
				t.Errorf("three memory stores admitted %d, fewer than the shared %d", gotLocal, got)
			}
			t.Skipf("the local calls took %v: three memory stores could reach %.1f calls in %v, too few to tell three budgets from the shared one (%d admitted, shared %d)",
				runLocal.mean, reachLocal, d, gotLocal, got)
		}
	}
	if float64(gotLocal) < want {
		t.Errorf("three memory stores admitted %d, want %.0f (about three times the shared %d)", gotLocal, want, got)
	}
}

// TestToolCapHoldsFleetWide: eight callers through three gateways sharing
// Redis never run more than three calls of a capped tool at once.
func TestToolCapHoldsFleetWide(t *testing.T) {
	if testing.Short() {
		t.Skip("runs load for seconds")
	}
	f := startLimited(t, redisLimiters(t, redistest.Start(t), 3, limit.Options{Tools: map[string]int{"sleep": 3}})...)
	got := loops(t, f, 8, 2*time.Second, func(i int) string { return fmt.Sprintf("caller-%d", i) })
	if p := f.calls.Peak("sleep"); p > 3 || p < 2 {
		t.Errorf("peak of the capped tool at the replicas = %d, want 2 or 3", p)
	}
	var refused float64
	for _, gw := range f.gws {
		refused += testutil.ToFloat64(gw.metrics.limitDecisions.WithLabelValues("refused", "tool"))
	}
	if got == 0 || refused == 0 {
		t.Errorf("admitted %d, refused by the tool cap %v: want both", got, refused)
	}
}

// TestForgedJWTCannotSpendAnothersBudget: limits key on the token itself,
// so a JWT forged with alice's iss and sub spends its own bucket.
func TestForgedJWTCannotSpendAnothersBudget(t *testing.T) {
	f := startLimited(t, limit.NewLimiter(limit.NewMemory(0), &limit.Options{Rate: 0.1, Burst: 1}))
	r := newRaw(t, f.fronts[0].URL+"/mcp", "2026-07-28")
	jwt := func(sig string) map[string]string {
		seg := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
		return map[string]string{"Authorization": "Bearer " + seg(`{"alg":"RS256"}`) + "." + seg(`{"iss":"https://idp","sub":"alice"}`) + "." + seg(sig)}
	}
	forged, alice := jwt("forged"), jwt("alice's real signature")
	if got := callTool(t, r, 1, "echo", map[string]any{"text": "x"}, forged); got.status != 200 {
		t.Fatalf("forged first call: %d", got.status)
	}
	wantRateLimited(t, callTool(t, r, 2, "echo", map[string]any{"text": "x"}, forged), 1)
	if got := callTool(t, r, 3, "echo", map[string]any{"text": "x"}, alice); got.status != 200 {
		t.Fatalf("alice after the forger spent a bucket naming her: %d %s", got.status, got.body)
	}
}

// TestLeaseHeldUntilTheAnswerEnds: a lease lasts as long as its call's
// answer, however it ends: a normal answer, or a client that leaves (for
// 2026-07-28 the cancel of the call; for a legacy stream, the end of the
// call it goes on running).
func TestLeaseHeldUntilTheAnswerEnds(t *testing.T) {
	l := limit.NewLimiter(limit.NewMemory(0), &limit.Options{Concurrency: 5})
	f := startLimited(t, l)
	waitHeld := func(want int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for l.Held() != want {
			if time.Now().After(deadline) {
				t.Fatalf("leases held = %d, want %d", l.Held(), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	r := newRaw(t, f.fronts[0].URL+"/mcp", "2026-07-28")
	if got := callTool(t, r, 1, "echo", map[string]any{"text": "x"}, nil); got.status != 200 {
		t.Fatal(got.body)
	}
	waitHeld(0)
	for _, era := range []string{"2026-07-28", "2025-11-25"} {
		r := newRaw(t, f.fronts[0].URL+"/mcp", era)
		if era == "2025-11-25" {
			r.initialize()
		}
		ctx, cancel := context.WithCancel(context.Background())
		posted := make(chan struct{})
		start := time.Now()
		go func() {
			defer close(posted)
			meta := `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
			if era == "2025-11-25" {
				meta = ""
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.url, strings.NewReader(
				`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"sleep","arguments":{"seconds":3}`+meta+`}}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Protocol-Version", era)
			if era == "2025-11-25" {
				req.Header.Set("Mcp-Session-Id", r.session)
			} else {
				req.Header.Set("Mcp-Method", "tools/call")
				req.Header.Set("Mcp-Name", "sleep")
			}
			if resp, err := r.client.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		waitHeld(1)
		cancel()
		<-posted
		if era == "2025-11-25" {
			// The call runs on after its client left, for 3 s; so does its
			// lease.
			time.Sleep(time.Second)
			if l.Held() != 1 {
				t.Fatalf("legacy call still running upstream, but leases held = %d", l.Held())
			}
		}
		waitHeld(0)
		if era == "2026-07-28" && time.Since(start) >= 3*time.Second {
			t.Errorf("the lease of a cancelled 2026-07-28 call went %v after the call began, not before its 3 s end", time.Since(start))
		}
	}
}

// TestReplica429PassesThroughUntouched: a replica's own rate limit reaches
// the client as the replica wrote it, and is never retried elsewhere.
func TestReplica429PassesThroughUntouched(t *testing.T) {
	var hits atomic.Int32
	body := `{"jsonrpc":"2.0","id":1,"error":{"code":-32023,"message":"slow down","data":{"retryAfterMs":1500}}}`
	limited := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "2")
		w.Header().Set("RateLimit-Limit", "7")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, body)
	}))
	t.Cleanup(limited.Close)
	_, other := liveReplica(t, "other")
	gw := startGatewayOn(t, []upstream.Spec{{Name: "limited", URL: limited.URL + "/mcp"}, {Name: "other", URL: other}},
		&Options{Balance: 2 /* round-robin */}, io.Discard)
	front := newFront(gw)
	t.Cleanup(front.Close)
	r := newRaw(t, front.URL+"/mcp", "2026-07-28")
	for id := 1; hits.Load() == 0 && id < 10; id++ {
		got := callTool(t, r, id, "echo", map[string]any{"text": "x"}, nil)
		if got.status == 429 && (got.body != body || got.retryAfter != "2" || got.rlLimit != "7") {
			t.Fatalf("replica's 429 changed on the way: %q, Retry-After %q, RateLimit-Limit %q", got.body, got.retryAfter, got.rlLimit)
		}
		if hits.Load() == 1 && got.status != 429 {
			t.Fatalf("the replica's 429 was retried elsewhere: status %d", got.status)
		}
	}
	if hits.Load() != 1 {
		t.Fatalf("the rate-limiting replica got %d requests, want 1", hits.Load())
	}
}

func TestLimitsWhenTheStoreFails(t *testing.T) {
	addr := redistest.Start(t)
	for _, closed := range []bool{false, true} {
		t.Run(fmt.Sprintf("closed=%v", closed), func(t *testing.T) {
			p := testproc.NewFlakyProxy(t, addr)
			limiterLog := &syncBuffer{}
			ls := redisLimiters(t, p.Addr(), 1, limit.Options{Rate: 0.2, Burst: 1, FailClosed: closed,
				Log: slog.New(slog.NewJSONHandler(limiterLog, nil))})
			f := startLimited(t, ls...)
			r := newRaw(t, f.fronts[0].URL+"/mcp", "2026-07-28")
			tok := map[string]string{"Authorization": "Bearer " + t.Name()}
			if got := callTool(t, r, 1, "echo", map[string]any{"text": "x"}, tok); got.status != 200 {
				t.Fatalf("first: %d", got.status)
			}
			wantRateLimited(t, callTool(t, r, 2, "echo", map[string]any{"text": "x"}, tok), 1)
			p.Cut()
			for id := 3; id < 6; id++ {
				got := callTool(t, r, id, "echo", map[string]any{"text": "x"}, tok)
				switch {
				case !closed && got.status != 200:
					t.Fatalf("store down, fail open: status %d %s", got.status, got.body)
				case closed && (got.status != 503 || got.retryAfter == "" || got.data.RetryAfterMs == nil):
					t.Fatalf("store down, fail closed: status %d Retry-After %q %s", got.status, got.retryAfter, got.body)
				}
			}
			m := f.gws[0].metrics
			if n := testutil.ToFloat64(m.limitFailOpen); (n == 3) != !closed {
				t.Errorf("fail-open count %v", n)
			}
			if !closed && !strings.Contains(limiterLog.String(), "limiter.fail_open") {
				t.Error("no limiter.fail_open line in the log")
			}
			p.Restore()
			// Back: the bucket still remembers, without a restart.
			deadline := time.Now().Add(5 * time.Second)
			for {
				got := callTool(t, r, 9, "echo", map[string]any{"text": "x"}, tok)
				if got.status == 429 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("store back, but limits do not hold: status %d", got.status)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

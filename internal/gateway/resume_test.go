package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/session"
	"github.com/mcpfleet/mcpfleet/internal/testproc"
	"github.com/mcpfleet/mcpfleet/internal/testserver"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// progressLog records the progress notifications a client receives.
type progressLog struct {
	mu   sync.Mutex
	seen []float64
}

func (p *progressLog) handler(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen = append(p.seen, req.Params.Progress)
}

// check fails unless every one of the notifications the replica sent, at
// least want and at most most, came once, in order.
func (p *progressLog) check(t *testing.T, want, most int) {
	t.Helper()
	// The SDK may hand the result over before the last notifications.
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		p.mu.Lock()
		n := len(p.seen)
		p.mu.Unlock()
		if n >= want {
			break
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := 1; i < len(p.seen); i++ {
		if p.seen[i] <= p.seen[i-1] {
			t.Fatalf("progress %v came after %v: out of order or twice (%v)", p.seen[i], p.seen[i-1], p.seen)
		}
	}
	if len(p.seen) < want || len(p.seen) > most {
		t.Fatalf("received %d progress notifications, the replica sent %d to %d", len(p.seen), want, most)
	}
}

// checkSame fails unless the client received exactly the progress values
// sent (increasing), each once and in order, and at least a few of them.
func (p *progressLog) checkSame(t *testing.T, sent []float64) {
	t.Helper()
	p.check(t, len(sent), len(sent))
	p.mu.Lock()
	defer p.mu.Unlock()
	if !slices.Equal(p.seen, sent) {
		t.Fatalf("received progress %v, the replicas sent %v", p.seen, sent)
	}
	// A 3 s sleep ticking every 0.1 s, however busy the machine.
	if len(sent) < 5 {
		t.Fatalf("only %d progress notifications in a 3 s sleep: %v", len(sent), sent)
	}
}

// relayedEvents returns how many events the gateway relayed (or kept) for
// the one tools/call its log shows.
func relayedEvents(t *testing.T, logs *syncBuffer) int {
	t.Helper()
	// The line is written once the replica's answer has ended, which may
	// be just after the client has it.
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end) && !strings.Contains(logs.String(), `"tools/call"`); {
		time.Sleep(10 * time.Millisecond)
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		var v struct {
			Method     string `json:"method"`
			HTTPMethod string `json:"http_method"`
			Events     int    `json:"events"`
		}
		if json.Unmarshal([]byte(line), &v) == nil && v.Method == "tools/call" && v.HTTPMethod == "POST" {
			return v.Events
		}
	}
	t.Fatalf("no tools/call in the log:\n%s", logs.String())
	return 0
}

// cutAfter cuts every connection through p after d, and lets new ones
// through again at once: the client's stream breaks mid-call.
func cutAfter(p *testproc.FlakyProxy, d time.Duration) {
	time.AfterFunc(d, func() {
		p.Cut()
		p.Restore()
	})
}

// sleepAcrossCut calls a 3 s sleep with progress through a proxy to front
// that cuts the client's connection at 1.2 s, and returns what progress
// the client received.
func sleepAcrossCut(t *testing.T, front string) *progressLog {
	t.Helper()
	proxy := testproc.NewFlakyProxy(t, strings.TrimPrefix(front, "http://"))
	progress := &progressLog{}
	cs := connect(t, "http://"+proxy.Addr()+"/mcp", "2025-11-25", &mcp.ClientOptions{ProgressNotificationHandler: progress.handler})
	cutAfter(proxy, 1200*time.Millisecond)
	res := callWithProgress(t, cs, "sleep", map[string]any{"seconds": 3, "progress_every": 0.1})
	if got := res.Content[0].(*mcp.TextContent).Text; !strings.HasPrefix(got, "slept 3s") {
		t.Fatalf("result %q", got)
	}
	return progress
}

// callWithProgress calls sleep with a progress token.
func callWithProgress(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	params := &mcp.CallToolParams{Name: name, Arguments: args}
	params.SetProgressToken("p")
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		t.Fatalf("calling %s across the cut: %v", name, err)
	}
	if res.IsError || len(res.Content) == 0 {
		t.Fatalf("calling %s: error result %+v", name, res)
	}
	return res
}

// TestResumeThroughOneGateway: a legacy client whose connection is cut in
// the middle of a sleep with progress resumes (the Go SDK sends a GET with
// Last-Event-ID by itself) and gets every event the replica sent, once and
// in order, and the result; the replica keeps no events of its own.
func TestResumeThroughOneGateway(t *testing.T) {
	f := startFleet(t, 2, &Options{KeepAlive: 200 * time.Millisecond})
	progress := sleepAcrossCut(t, f.front.URL)
	n := relayedEvents(t, f.logs) - 1
	progress.check(t, n, n)
	if n := testutil.ToFloat64(f.gw.streamMetrics.resumes.WithLabelValues("replayed")); n != 1 {
		t.Errorf("%v resumes replayed from the buffer, want 1", n)
	}
}

// TestResumeMutateRunsOnce: a mutate cut before its only event resumes from
// the gateway's priming event, gets its result, and mutates once.
func TestResumeMutateRunsOnce(t *testing.T) {
	f := startFleet(t, 2, &Options{KeepAlive: 200 * time.Millisecond})
	proxy := testproc.NewFlakyProxy(t, strings.TrimPrefix(f.front.URL, "http://"))
	cs := connect(t, "http://"+proxy.Addr()+"/mcp", "2025-11-25", nil)
	cutAfter(proxy, 500*time.Millisecond)
	res := callWithProgress(t, cs, "mutate", map[string]any{"key": "k", "seconds": 2, "at": 0.8})
	if got := res.Content[0].(*mcp.TextContent).Text; !strings.HasPrefix(got, "mutated k") {
		t.Fatalf("result %q", got)
	}
	if got := f.count("k"); got != 1 {
		t.Errorf("mutate ran %d times, want 1", got)
	}
}

// TestEventIDsSealed: every event of a legacy POST stream carries one ID,
// sealed for its session, at positions 0 (the gateway's priming event,
// with its retry field), 1, 2, ... in order; a 2026-07-28 stream gets none.
func TestEventIDsSealed(t *testing.T) {
	f := startFleet(t, 1, nil)
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		r := newRaw(t, f.url(), version)
		if version == "2025-11-25" {
			r.initialize()
		}
		resp := r.post(context.Background(), 2, "tools/call", map[string]any{
			"name": "sleep", "arguments": map[string]any{"seconds": 0.5, "progress_every": 0.1}, "_meta": map[string]any{"progressToken": "p"},
		}, nil)
		var ids []string
		var first []string // the first event's lines
		firstDone := false
		for l := range lines(resp.Body) {
			if id, ok := strings.CutPrefix(l, "id: "); ok {
				ids = append(ids, id)
			}
			if !firstDone {
				first = append(first, l)
				firstDone = l == "" && len(first) > 1
			}
		}
		resp.Body.Close()
		if version == "2025-11-25" && !slices.Contains(first, "retry: 1000") {
			t.Errorf("the priming event %q has no retry field of the gateway's 1 s (SEP-1699)", first)
		}
		if version == "2026-07-28" {
			if len(ids) != 0 {
				t.Errorf("a 2026-07-28 stream carries event IDs %q", ids)
			}
			continue
		}
		// The priming event, the result, and progress between them, of
		// which a loaded machine's ticker may drop some.
		if len(ids) < 3 {
			t.Fatalf("%d event IDs on a stream of progress", len(ids))
		}
		for i, id := range ids {
			e, err := f.gw.keys.OpenEvent(r.session, id)
			if err != nil || e.Pos != uint64(i) || e.Replica != "replica-a" || e.Upstream != "" {
				t.Fatalf("event %d: id opens as %+v, %v", i, e, err)
			}
			if _, err := f.gw.keys.OpenEvent("another session", id); err == nil {
				t.Fatalf("event %d: its id opens in another session", i)
			}
		}
	}
}

// TestResumeAtReplicaWithEventStore: against replicas that keep their own
// events, a client cut mid-call through gateway A resumes at its replica
// through gateway B (with the replica's own event ID), gets every event
// once and in order, and no 409: A let go of the upstream stream at the cut.
func TestResumeAtReplicaWithEventStore(t *testing.T) {
	f, b, logsB, url, sent := startEventStorePair(t)
	progress := sleepAcrossCut(t, url)
	// The replica's ticker may drop ticks on a busy machine, so their
	// number is not fixed: the client must get what the replicas wrote,
	// on either stream or in the replay, each once and in order.
	progress.checkSame(t, sent.values())
	// Every resume goes to B, which sends it to the replica. The replica
	// may end a resumed stream before the call is over (on a busy machine
	// the Go SDK's server ended one after 11 events, about 200 ms), and
	// the client then resumes again, from its last event: B sends one
	// resume or more, A none. What the client got is checked above.
	if n := testutil.ToFloat64(f.gw.streamMetrics.resumes.WithLabelValues("replica")); n != 0 {
		t.Errorf("gateway A sent %v resumes to the replica, want none", n)
	}
	if n := testutil.ToFloat64(b.streamMetrics.resumes.WithLabelValues("replica")); n < 1 {
		t.Errorf("gateway B sent %v resumes to the replica, want one or more", n)
	}
	if logs := f.logs.String() + logsB.String(); strings.Contains(logs, `"status":409`) {
		t.Errorf("a resume was refused 409:\n%s", logs)
	}
}

// startEventStorePair starts two testserver replicas that keep their own
// events and two gateways in front of them with one keyring and no shared
// buffer (the fleet holds A), and returns B, its logs and a balancer that
// sends every resume to B.
func startEventStorePair(t *testing.T) (f *fleet, b *Gateway, logsB *syncBuffer, url string, sent *sentProgress) {
	t.Helper()
	f = &fleet{logs: &syncBuffer{}}
	sent = &sentProgress{}
	var specs []upstream.Spec
	for _, name := range []string{"replica-a", "replica-b"} {
		s, err := testserver.New(name, &testserver.Options{Era: testserver.Era2025, EventStore: true})
		if err != nil {
			t.Fatal(err)
		}
		addr, _ := serveOn(t, "", sent.wrap(s.Handler()))
		f.servers = append(f.servers, s)
		specs = append(specs, upstream.Spec{Name: name, URL: "http://" + addr + "/mcp"})
	}
	// Two gateways with one keyring and no shared buffer: the event ID
	// alone names the replica and its own event ID, so the resume works
	// through the gateway that never saw the stream.
	keys := keyring(t, 1)
	f.gw = startGatewayOn(t, specs, &Options{KeepAlive: 200 * time.Millisecond, Keyring: keys}, f.logs)
	f.front = newFront(f.gw)
	t.Cleanup(f.front.Close)
	logsB = &syncBuffer{}
	b = startGatewayOn(t, specs, &Options{KeepAlive: 200 * time.Millisecond, Keyring: keys}, logsB)
	frontB := newFront(b)
	t.Cleanup(frontB.Close)
	return f, b, logsB, resumesTo(t, f.front.URL, frontB.URL), sent
}

// sentProgress records the progress values replicas write in their
// responses, on a stream or in a replay.
type sentProgress struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *sentProgress) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&progressWriter{ResponseWriter: w, sent: s}, r)
	})
}

var progressField = regexp.MustCompile(`"progress":(-?[0-9][0-9.eE+-]*)`)

// values returns the distinct progress values written, in increasing order.
func (s *sentProgress) values() []float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[float64]bool{}
	var vs []float64
	for _, m := range progressField.FindAllSubmatch(s.buf.Bytes(), -1) {
		v, err := strconv.ParseFloat(string(m[1]), 64)
		if err == nil && !seen[v] {
			seen[v] = true
			vs = append(vs, v)
		}
	}
	slices.Sort(vs)
	return vs
}

// progressWriter copies what a replica writes to its sentProgress.
type progressWriter struct {
	http.ResponseWriter
	sent *sentProgress
}

func (w *progressWriter) Write(p []byte) (int, error) {
	w.sent.mu.Lock()
	w.sent.buf.Write(p)
	w.sent.mu.Unlock()
	return w.ResponseWriter.Write(p)
}

func (w *progressWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *progressWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestResumeAtReplicaAtOnce: a client that resumes the moment it dropped
// its stream (no reconnection delay) may reach the replica before the
// replica has seen gateway A close the upstream stream, and the replica
// refuses a resume of a stream still open (409 in the Go SDK); gateway B
// asks again for a moment rather than pass the 409 on. Five rounds, as
// the race is not lost every time.
func TestResumeAtReplicaAtOnce(t *testing.T) {
	_, _, _, url, _ := startEventStorePair(t)
	for round := range 5 {
		r := newRaw(t, url+"/mcp", "2025-11-25")
		r.initialize()
		resp := r.post(context.Background(), 2, "tools/call", map[string]any{
			"name": "sleep", "arguments": map[string]any{"seconds": 0.6, "progress_every": 0.05}, "_meta": map[string]any{"progressToken": "p"},
		}, nil)
		var last string
		for l, n := range countedIDs(lines(resp.Body)) {
			last = l
			if n == 4 {
				break
			}
		}
		resp.Body.Close()
		got := false
		for l := range r.get(t, last) { // fails the test on a 409
			if strings.Contains(l, `"slept 0.6s`) {
				got = true
				break
			}
		}
		if !got {
			t.Fatalf("round %d: the resumed stream ended without the result", round)
		}
	}
}

// countedIDs yields the event IDs among a stream's lines, and how many so far.
func countedIDs(lines <-chan string) func(func(string, int) bool) {
	return func(yield func(string, int) bool) {
		n := 0
		for l := range lines {
			if id, ok := strings.CutPrefix(l, "id: "); ok {
				n++
				if !yield(id, n) {
					return
				}
			}
		}
	}
}

// TestKeptEventIsTheWireBytes: a sealed event is one allocation of exactly
// the bytes the client gets, the replica's own ID line gone, and the memory
// buffer counts what it holds; nothing rides along per kept event.
func TestKeptEventIsTheWireBytes(t *testing.T) {
	g := startGatewayOn(t, []upstream.Spec{{Name: "replica-a", URL: "http://127.0.0.1:1/mcp"}}, &Options{KeepAlive: -1}, io.Discard)
	s := g.newStream("sealed-session", session.EventID{Replica: "replica-a"}, true)
	var kept int
	for _, block := range []string{
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n",
		"id: replica-own-7\ndata: {}\r\n\r\n",
		"data: x\n\n",
	} {
		out, at := s.seal([]byte(block))
		if at == nil {
			t.Fatalf("seal(%q) sealed nothing", block)
		}
		if cap(out) != len(out) {
			t.Errorf("seal(%q): %d bytes in an allocation of %d", block, len(out), cap(out))
		}
		if bytes.Contains(out, []byte("replica-own-7")) || !bytes.HasSuffix(out, []byte("\n\n")) {
			t.Errorf("seal(%q) = %q", block, out)
		}
		kept += len(out)
	}
	st := g.recent.Stats()
	if st.Bytes != int64(kept) {
		t.Errorf("the buffer counts %d bytes for %d sealed", st.Bytes, kept)
	}
}

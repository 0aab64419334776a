package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/config"
	"github.com/mcpfleet/mcpfleet/internal/session"
	"github.com/mcpfleet/mcpfleet/internal/sse"
	"github.com/mcpfleet/mcpfleet/internal/store/redistest"
	"github.com/mcpfleet/mcpfleet/internal/testproc"
	"github.com/mcpfleet/mcpfleet/internal/testserver"
)

// Streams that survive, with real processes (docs/GATEWAY.md, "Resumable
// streams"): two mcpfleet serve processes share one secret file and one
// redis-server (resume.store: redis), in front of replicas that are
// processes too. A 2025-11-25 client written with net/http, so that the
// test chooses where its stream breaks, opens its session and its call
// through gateway A, drops the connection mid-call, and resumes with a GET
// and Last-Event-ID through gateway B (2025-11-25 transports,
// "Resumability and Redelivery"). The gateways' event IDs are opened with
// the shared secret, so every check is on exact positions: the events
// before the cut and after the resume together are positions 0, 1, ..., N
// of one stream, each once, in order, the result last.

// resumePair is two gateway processes sharing a secret and a stream buffer.
type resumePair struct {
	gw, admin [2]string // host:port of gateway A and B, and of their admin listeners
	keys      *session.Keyring
}

// startResumePair starts a redis-server and two gateways in front of the
// replicas at upstreams (MCP URLs), and waits until both are ready.
func startResumePair(t *testing.T, upstreams ...string) *resumePair {
	t.Helper()
	return startResumePairOn(t, "redis_url: redis://"+redistest.Start(t)+"/0\n", upstreams...)
}

// startResumePairOn is startResumePair on the store that store (its
// configuration lines) names.
func startResumePairOn(t *testing.T, store string, upstreams ...string) *resumePair {
	t.Helper()
	secret := writeSecret(t)
	sec, err := config.ReadSecret(secret)
	if err != nil {
		t.Fatal(err)
	}
	p := &resumePair{}
	if p.keys, err = session.NewKeyring(sec.Keys); err != nil {
		t.Fatal(err)
	}
	var ups strings.Builder
	for i, u := range upstreams {
		fmt.Fprintf(&ups, "  - {name: replica-%d, url: '%s'}\n", i, u)
	}
	for i := range p.gw {
		p.gw[i], p.admin[i] = testproc.FreeAddr(t), testproc.FreeAddr(t)
		cfg := filepath.Join(t.TempDir(), "mcpfleet.yaml")
		body := fmt.Sprintf("listen: %s\nadmin: %s\nsecret_file: %s\n%skeepalive: 200ms\ngrace: 1s\n"+
			"resume: {store: redis, grace: 1m}\nupstreams:\n%s", p.gw[i], p.admin[i], secret, store, ups.String())
		if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		startProcess(t, "serve", "--config", cfg)
	}
	for _, gw := range p.gw {
		testproc.WaitReady(t, "http://"+gw+"/readyz")
	}
	return p
}

// resumes returns how many resumes gateway i counted with outcome.
func (p *resumePair) resumes(t *testing.T, i int, outcome string) int {
	t.Helper()
	_, metrics := probeStatus(t, "http://"+p.admin[i]+"/metrics")
	m := regexp.MustCompile(`(?m)^mcpfleet_stream_resumes_total\{outcome="` + outcome + `"\} (\d+)$`).FindStringSubmatch(metrics)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// rawSession is a 2025-11-25 session a client opened with raw HTTP.
type rawSession struct {
	t      *testing.T
	id     string           // the sealed Mcp-Session-Id
	keys   *session.Keyring // the gateways' shared secret, to open event IDs
	client *http.Client
}

// openSession initializes a session through gateway A.
func (p *resumePair) openSession(t *testing.T) *rawSession {
	t.Helper()
	gw := p.gw[0]
	// No connection reuse: closing a body closes its connection, which is
	// how the client drops its stream.
	s := &rawSession{t: t, keys: p.keys, client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
	resp := s.post(context.Background(), gw, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if s.id = resp.Header.Get("Mcp-Session-Id"); resp.StatusCode != http.StatusOK || s.id == "" {
		t.Fatalf("initialize: status %d, session %q", resp.StatusCode, s.id)
	}
	resp = s.post(context.Background(), gw, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/initialized: status %d", resp.StatusCode)
	}
	return s
}

// post sends one message to gw's MCP endpoint within the session.
func (s *rawSession) post(ctx context.Context, gw, body string) *http.Response {
	s.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+gw+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	s.headers(req)
	resp, err := s.client.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	return resp
}

func (s *rawSession) headers(req *http.Request) {
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if s.id != "" {
		req.Header.Set("Mcp-Session-Id", s.id)
	}
}

// event is one event a client received, its gateway ID opened.
type event struct {
	at   session.EventID
	id   string // as received
	data []byte
}

// message is the JSON-RPC message of an event's data.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Progress float64 `json:"progress"`
	} `json:"params"`
	Result *struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
}

func (e event) message() message {
	var m message
	_ = json.Unmarshal(e.data, &m) // the empty data of a priming event is no message
	return m
}

// isResult reports whether the event is the answer to the call (id 2).
func (e event) isResult() bool { return string(e.message().ID) == "2" }

// events reads the SSE events of body, each ID opened for the session,
// until stop says so (true) or the stream ends (false). stop is asked
// after each event, and after each keep-alive (a comment: the stream has
// nothing to say for now) with idle set.
func (s *rawSession) events(body io.Reader, stop func(evs []event, idle bool) bool) ([]event, bool) {
	s.t.Helper()
	var got []event
	rd := sse.NewReader(body, 0)
	for {
		block, err := rd.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				s.t.Logf("reading the stream: %v", err)
			}
			return got, false
		}
		ev := sse.Parse(block)
		if ev.Comment {
			if stop(got, true) {
				return got, true
			}
			continue
		}
		at, err := s.openID(ev.ID)
		if err != nil {
			s.t.Fatalf("event %d (%q): %v", len(got), block, err)
		}
		got = append(got, event{at: at, id: ev.ID, data: bytes.Clone(ev.Data)})
		if stop(got, false) {
			return got, true
		}
	}
}

// openID opens a gateway event ID of the session.
func (s *rawSession) openID(id string) (session.EventID, error) {
	if id == "" {
		return session.EventID{}, errors.New("no event id")
	}
	return s.keys.OpenEvent(s.id, id)
}

// callAndCut POSTs the tools/call body (id 2) through gw and drops the
// connection once cut says so; it returns the events received.
func (s *rawSession) callAndCut(ctx context.Context, gw, body string, cut func([]event) bool) []event {
	s.t.Helper()
	resp := s.post(ctx, gw, body)
	defer resp.Body.Close() // unread: the connection closes
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		s.t.Fatalf("tools/call: status %d, %s: %s", resp.StatusCode, ct, b)
	}
	got, cutNow := s.events(resp.Body, func(evs []event, idle bool) bool { return !idle && cut(evs) })
	if !cutNow {
		s.t.Fatalf("the stream ended before the cut, after %d events", len(got))
	}
	return got
}

// get sends the resume: a GET of the stream after last through gw. A
// status other than 200 fails the test.
func (s *rawSession) get(ctx context.Context, gw string, last event) *http.Response {
	s.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+gw+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", last.id)
	s.headers(req)
	resp, err := s.client.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		s.t.Fatalf("resume after position %d: status %d: %s", last.at.Pos, resp.StatusCode, b)
	}
	return resp
}

// untilResult stops a read at the call's result.
func untilResult(evs []event, idle bool) bool {
	return !idle && len(evs) > 0 && evs[len(evs)-1].isResult()
}

// resume resumes the stream after last through gw and reads it to the
// call's result, then on to its end (for at most two seconds more):
// nothing may follow the result.
func (s *rawSession) resume(ctx context.Context, gw string, last event) []event {
	s.t.Helper()
	resp := s.get(ctx, gw, last)
	defer resp.Body.Close()
	got, _ := s.events(resp.Body, untilResult)
	if len(got) == 0 || !got[len(got)-1].isResult() {
		s.t.Fatalf("the resumed stream ended without the result, after %d events", len(got))
	}
	tail, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	stop := context.AfterFunc(tail, func() { resp.Body.Close() })
	defer stop()
	if more, _ := s.events(resp.Body, func([]event, bool) bool { return false }); len(more) > 0 {
		s.t.Errorf("%d events after the result, the first %q", len(more), more[0].data)
	}
	return got
}

// poll resumes the stream after last through gw as a polling client does
// (SEP-1699): each GET reads what the replica replays, up to the first
// keep-alive, and the next GET resumes after the last event received,
// until the result comes. It returns the events of every poll, in order,
// and how many GETs it took.
func (s *rawSession) poll(ctx context.Context, gw string, last event) (got []event, gets int) {
	s.t.Helper()
	for ctx.Err() == nil {
		resp := s.get(ctx, gw, last)
		gets++
		evs, _ := s.events(resp.Body, func(evs []event, idle bool) bool { return idle || untilResult(evs, idle) })
		resp.Body.Close()
		got = append(got, evs...)
		if len(got) > 0 {
			last = got[len(got)-1]
			if last.isResult() {
				return got, gets
			}
		}
	}
	s.t.Fatalf("no result after %d polls: %v", gets, ctx.Err())
	return nil, gets
}

// checkSequence fails unless before and after are one stream of replica
// at positions from, from+1, ... (each once, in order), the result last,
// and returns the progress values of its notifications, in order.
func checkSequence(t *testing.T, replica string, from uint64, before, after []event) []float64 {
	t.Helper()
	all := append(append([]event(nil), before...), after...)
	var progress []float64
	for i, e := range all {
		if e.at.Pos != from+uint64(i) || e.at.Replica != replica || e.at.Stream != all[0].at.Stream {
			t.Fatalf("event %d of %d (%d before the cut) is %+v, want position %d of %s's stream %x", i, len(all), len(before), e.at, from+uint64(i), replica, all[0].at.Stream)
		}
		if m := e.message(); m.Method == "notifications/progress" {
			progress = append(progress, m.Params.Progress)
		}
	}
	for i := 1; i < len(progress); i++ {
		if progress[i] <= progress[i-1] {
			t.Fatalf("progress %v came after %v: %v", progress[i], progress[i-1], progress)
		}
	}
	t.Logf("%d events before the cut, %d after the resume (positions %d to %d), %d progress notifications",
		len(before), len(after), from, from+uint64(len(all))-1, len(progress))
	return progress
}

// hasProgress reports whether evs hold a progress notification.
func hasProgress(evs []event) bool { return progressCount(1)(evs) }

// progressCount returns a cut condition: n progress notifications received.
func progressCount(n int) func([]event) bool {
	return func(evs []event) bool {
		c := 0
		for _, e := range evs {
			if e.message().Method == "notifications/progress" {
				c++
			}
		}
		return c >= n
	}
}

// startTestservers starts n testserver replicas of the 2025 era, sharing
// one ledger file, with extra flags, and returns their MCP URLs and the
// ledger's path.
func startTestservers(t *testing.T, n int, extra ...string) (urls []string, ledger string) {
	t.Helper()
	ledger = filepath.Join(t.TempDir(), "ledger")
	for i := range n {
		addr := testproc.FreeAddr(t)
		startProcess(t, append([]string{"testserver", "--listen", addr, "--name", fmt.Sprintf("ts-%d", i), "--era", "2025", "--ledger", ledger}, extra...)...)
		urls = append(urls, "http://"+addr+"/mcp")
	}
	for _, u := range urls {
		testproc.WaitReady(t, strings.TrimSuffix(u, "/mcp")+"/health")
	}
	return urls, ledger
}

// callBody is a tools/call (id 2) with a progress token.
func callBody(tool string, args map[string]any) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args, "_meta": map[string]any{"progressToken": "p"}}})
	return string(b)
}

// resultText is the text of the result event (the last of evs).
func resultText(t *testing.T, evs []event) string {
	t.Helper()
	m := evs[len(evs)-1].message()
	if m.Result == nil || len(m.Result.Content) == 0 {
		t.Fatalf("the last event is no result: %s", evs[len(evs)-1].data)
	}
	return m.Result.Content[0].Text
}

// TestResumeProcessesThroughAnotherGateway: a legacy client cut in the
// middle of a sleep with progress (replicas without an event store)
// resumes through the other gateway process, which replays from the
// shared redis-server what gateway A read on after the cut: every event,
// once, in order, then the result, and the stream ends.
func TestResumeProcessesThroughAnotherGateway(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	urls, _ := startTestservers(t, 2)
	p := startResumePair(t, urls...)
	sleepAcrossCut(t, p, resumeVia{outcome: "replayed"})
}

// TestResumeProcessesOnARedisCluster: the same cut and resume through the
// other gateway, the two sharing a real Redis Cluster (redis_mode:
// cluster): the kept stream is found whichever primary holds it.
func TestResumeProcessesOnARedisCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Redis Cluster and processes")
	}
	c := redistest.StartCluster(t)
	urls, _ := startTestservers(t, 2)
	p := startResumePairOn(t, "redis_mode: cluster\nredis_url: '"+c.URL+"'\n", urls...)
	sleepAcrossCut(t, p, resumeVia{outcome: "replayed"})
}

// sleepAcrossCut calls a 3 s sleep with progress every 0.1 s through
// gateway A, cuts it after 5 progress notifications and resumes through B
// (cutAndResume), and checks the result.
func sleepAcrossCut(t *testing.T, p *resumePair, via resumeVia) {
	t.Helper()
	_, after, progress := p.cutAndResume(t, callBody("sleep", map[string]any{"seconds": 3, "progress_every": 0.1}), progressCount(5), via)
	if got := resultText(t, after); !strings.HasPrefix(got, "slept 3s") {
		t.Errorf("result %q", got)
	}
	// The positions are the gateway's count of the replica's events, so
	// they already say that none was lost; the replica's ticker may drop
	// ticks on a busy machine, so their number is not fixed. The cut was
	// mid-call: progress came after the resume too.
	if !hasProgress(after) {
		t.Errorf("%d progress notifications, none after the resume", len(progress))
	}
}

// TestResumeProcessesMutateRunsOnce: a mutate cut through gateway A right
// after the gateway's priming event, before the call's only event,
// resumes through gateway B from that event, gets its result, and the
// shared ledger shows one mutation of its key.
func TestResumeProcessesMutateRunsOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	urls, ledger := startTestservers(t, 2)
	p := startResumePair(t, urls...)
	before, after, _ := p.cutAndResume(t, callBody("mutate", map[string]any{"key": "k", "seconds": 3, "at": 0.3}),
		func([]event) bool { return true }, resumeVia{outcome: "replayed"})
	if len(before) != 1 || len(before[0].data) != 0 || before[0].at.Pos != 0 {
		t.Errorf("the stream opened with %+v, want the gateway's priming event only", before)
	}
	if got := resultText(t, after); !strings.HasPrefix(got, "mutated k") {
		t.Errorf("result %q", got)
	}
	f, err := os.Open(ledger)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entries, err := testserver.ReadLedger(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Key != "k" {
		t.Errorf("ledger %+v, want one mutation of k", entries)
	}
}

// resumeVia says how a test's client resumes, and what gateway B does with
// it.
type resumeVia struct {
	outcome string // B's resume outcome: replayed (from the shared buffer) or replica
	polls   bool   // the client polls (several GETs) rather than follow one stream
}

// cutAndResume opens a session and calls through gateway A, cuts the
// stream once cut says so, and resumes through gateway B as via says. It
// checks that the sequence is whole, that B counted each GET with via's
// outcome and A none, and, for a resume at the replica, that every event
// after the gateway's priming event carries the replica's own ID (the
// resume then reached its replica, and no 409: A let go of the upstream
// stream at the cut). It returns the events before the cut and after it,
// and the progress values.
func (p *resumePair) cutAndResume(t *testing.T, body string, cut func([]event) bool, via resumeVia) (before, after []event, progress []float64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s := p.openSession(t)
	before = s.callAndCut(ctx, p.gw[0], body, cut)
	gets := 1
	if via.polls {
		after, gets = s.poll(ctx, p.gw[1], before[len(before)-1])
	} else {
		after = s.resume(ctx, p.gw[1], before[len(before)-1])
	}
	progress = checkSequence(t, before[0].at.Replica, 0, before, after)
	for i, e := range append(before[1:], after...) {
		if via.outcome == "replica" && e.at.Upstream == "" {
			t.Fatalf("event at position %d carries no event ID of the replica's", i+1)
		}
	}
	for i, want := range []int{0, gets} {
		if n := p.resumes(t, i, via.outcome); n != want {
			t.Errorf("gateway %c counted %d resumes %s, want %d", 'A'+i, n, via.outcome, want)
		}
	}
	return before, after, progress
}

// TestResumeProcessesAtReplicaWithEventStore: testserver replicas with
// --event-store; a sleep with progress cut through gateway A resumes at
// its replica through gateway B, with the replica's own event ID.
func TestResumeProcessesAtReplicaWithEventStore(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	urls, _ := startTestservers(t, 2, "--event-store")
	p := startResumePair(t, urls...)
	sleepAcrossCut(t, p, resumeVia{outcome: "replica"})
}

// TestResumeProcessesAtTypeScriptReplica: the official TypeScript
// everything server in Streamable HTTP mode, which keeps each session's
// events in memory, as two replicas; its long-running operation (6 steps
// over 3 s, a progress notification per step) cut after step 2 through
// gateway A resumes at the session's replica through gateway B, and the
// client gets steps 1 to 6 once each, in order, then the result.
//
// The client polls (SEP-1699): this server's event store replays what it
// holds after the ID, but a resumed stream gets nothing live, because its
// replayEventsAfter returns the last event's ID where the SDK expects the
// stream's, and the SDK files the new stream under that; the call's later
// events are stored only. So each GET reads the replay up to the first
// keep-alive, and the next resumes after it.
func TestResumeProcessesAtTypeScriptReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	node, modules := nodeTools(t)
	var urls []string
	for range 2 {
		urls = append(urls, "http://"+startEverything(t, node, modules, "streamableHttp")+"/mcp")
	}
	p := startResumePair(t, urls...)
	_, after, progress := p.cutAndResume(t, callBody("trigger-long-running-operation", map[string]any{"duration": 3, "steps": 6}), progressCount(2),
		resumeVia{outcome: "replica", polls: true})
	if want := []float64{1, 2, 3, 4, 5, 6}; !slices.Equal(progress, want) {
		t.Errorf("progress %v, want %v", progress, want)
	}
	if got := resultText(t, after); !strings.HasPrefix(got, "Long running operation completed") {
		t.Errorf("result %q", got)
	}
}

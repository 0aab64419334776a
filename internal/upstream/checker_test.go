package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/mcpfleet/mcpfleet/internal/testproc"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Backend answers health checks as its mode says.
type mode int32

const (
	modeOK mode = iota
	modeDraining
	modeUnavailable // 503 without the draining body
	modeError       // 500
	modeHang        // never answers
)

// backend is a replica whose health path (every GET) and MCP endpoint (every
// POST) answer as its mode says.
type backend struct {
	*httptest.Server
	mode         atomic.Int32
	mu           sync.Mutex // guards hosts and paths
	hosts, paths []string
}

func newBackend(t *testing.T, m mode) *backend {
	t.Helper()
	b := &backend{}
	b.mode.Store(int32(m))
	b.Server = httptest.NewServer(http.HandlerFunc(b.serve))
	t.Cleanup(b.Close)
	return b
}

func (b *backend) set(m mode) { b.mode.Store(int32(m)) }

func (b *backend) serve(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	b.hosts, b.paths = append(b.hosts, r.Host), append(b.paths, r.URL.Path)
	b.mu.Unlock()
	switch mode(b.mode.Load()) {
	case modeOK:
		if r.Method == http.MethodPost { // its MCP endpoint: a JSON-RPC answer
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"jsonrpc":"2.0","id":"mcpfleet-health","result":{}}`)
			return
		}
		fmt.Fprint(w, `{"status":"ok"}`)
	case modeDraining:
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"status":"draining"}`)
	case modeUnavailable:
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"status":"overloaded"}`)
	case modeError:
		w.WriteHeader(http.StatusInternalServerError)
	case modeHang:
		<-r.Context().Done()
	}
}

// closedURL returns the URL of a port nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	return "http://" + testproc.FreeAddr(t) + "/mcp" // free a moment ago: nothing listens
}

// changes records OnChange calls.
type changes struct {
	mu  sync.Mutex // guards got
	got []string
}

func (c *changes) record(name string, from, to State) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, fmt.Sprintf("%s %v->%v", name, from, to))
}

func (c *changes) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.got...)
}

func newFleet(t *testing.T, specs ...Spec) *Fleet {
	t.Helper()
	f, err := New(specs)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func newChecker(t *testing.T, f *Fleet, o CheckOptions) *Checker {
	t.Helper()
	c, err := NewChecker(f, &o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCheckClassifiesAnswers(t *testing.T) {
	// A second for the checks that answer, which a loaded machine may take
	// a good part of with Fall 1; the hang is the one that times out.
	tests := []struct {
		name    string
		url     func(t *testing.T) string
		timeout time.Duration
		want    State
	}{
		{"200 ok", backendURL(modeOK), time.Second, StateUp},
		{"503 draining", backendURL(modeDraining), time.Second, StateDraining},
		{"503 other", backendURL(modeUnavailable), time.Second, StateDown},
		{"500", backendURL(modeError), time.Second, StateDown},
		{"hang times out", backendURL(modeHang), 100 * time.Millisecond, StateDown},
		{"closed listener", closedURL, time.Second, StateDown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFleet(t, Spec{Name: "r", URL: tt.url(t)})
			var ch changes
			c := newChecker(t, f, CheckOptions{Fall: 1, Rise: 1, Timeout: tt.timeout, OnChange: ch.record})
			c.Check(t.Context())
			if got := f.Snapshot().At(0).State(); got != tt.want {
				t.Errorf("state = %v, want %v", got, tt.want)
			}
			if got := f.Snapshot().Eligible(0); got != (tt.want == StateUp) {
				t.Errorf("Eligible = %v in state %v", got, tt.want)
			}
			var want []string
			if tt.want != StateUp {
				want = []string{"r up->" + tt.want.String()}
			}
			if diff := cmp.Diff(want, ch.list()); diff != "" {
				t.Errorf("OnChange calls (-want +got):\n%s", diff)
			}
		})
	}
}

func backendURL(m mode) func(t *testing.T) string {
	return func(t *testing.T) string { return newBackend(t, m).URL + "/mcp" }
}

// TestCheckTransitionsInOrder drives one replica through fall, rise and a
// drain with the default fall 2 rise 2, one round per answer.
func TestCheckTransitionsInOrder(t *testing.T) {
	b := newBackend(t, modeOK)
	f := newFleet(t, Spec{Name: "r", URL: b.URL + "/mcp"})
	var ch changes
	// A second: an answer a loaded machine is slow with must not count
	// as a failure; the one hang step takes it.
	c := newChecker(t, f, CheckOptions{Timeout: time.Second, OnChange: ch.record})
	steps := []struct {
		m    mode
		want State
	}{
		{modeOK, StateUp},
		{modeError, StateUp},
		{modeHang, StateDown},
		{modeOK, StateDown},
		{modeOK, StateUp},
		{modeDraining, StateDraining},
		{modeOK, StateDraining},
		{modeDraining, StateDraining},
		{modeOK, StateDraining},
		{modeOK, StateUp},
		{modeDraining, StateDraining},
		{modeError, StateDraining},
		{modeError, StateDown},
	}
	for i, st := range steps {
		b.set(st.m)
		c.Check(t.Context())
		if got := f.Snapshot().At(0).State(); got != st.want {
			t.Fatalf("step %d: state %v, want %v", i, got, st.want)
		}
	}
	want := []string{"r up->down", "r down->up", "r up->draining", "r draining->up", "r up->draining", "r draining->down"}
	if diff := cmp.Diff(want, ch.list()); diff != "" {
		t.Errorf("OnChange calls (-want +got):\n%s", diff)
	}
}

func TestCheckRequestsHealthPathWithHost(t *testing.T) {
	for _, tt := range []struct{ name, host, want string }{
		{"replica host", "", ""},
		{"configured host", "mcp.example.com", "mcp.example.com"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := newBackend(t, modeOK)
			f := newFleet(t, Spec{Name: "r", URL: b.URL + "/deep/mcp"})
			newChecker(t, f, CheckOptions{Host: tt.host}).Check(t.Context())
			want := tt.want
			if want == "" {
				want = f.Snapshot().At(0).URL().Host
			}
			b.mu.Lock()
			defer b.mu.Unlock()
			// The first check proves the MCP endpoint too.
			if diff := cmp.Diff([]string{want, want}, b.hosts); diff != "" {
				t.Errorf("Host (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"/health", "/deep/mcp"}, b.paths); diff != "" {
				t.Errorf("path (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckLogsChanges(t *testing.T) {
	var buf bytes.Buffer
	f := newFleet(t, Spec{Name: "r", URL: newBackend(t, modeError).URL + "/mcp"})
	c := newChecker(t, f, CheckOptions{Fall: 1, Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	c.Check(t.Context())
	c.Check(t.Context()) // no change, no line
	got := buf.String()
	for _, want := range []string{"level=INFO", "replica=r", "from=up", "to=down", `reason="status 500"`} {
		if !strings.Contains(got, want) {
			t.Errorf("log %q lacks %q", got, want)
		}
	}
	if n := strings.Count(got, "\n"); n != 1 {
		t.Errorf("%d log lines, want 1", n)
	}
}

// TestRunChecksEveryInterval runs the real loop with a short interval.
func TestRunChecksEveryInterval(t *testing.T) {
	b := newBackend(t, modeError)
	f := newFleet(t, Spec{Name: "r", URL: b.URL + "/mcp"})
	var ch changes
	c := newChecker(t, f, CheckOptions{Interval: 20 * time.Millisecond, Timeout: time.Second, OnChange: ch.record})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()

	r := f.Snapshot().At(0)
	waitState(t, r, StateDown)
	if f.policy.Load() == nil {
		t.Error("passive reports have no policy while Run runs")
	}
	if err := newChecker(t, f, CheckOptions{}).Run(ctx); !errors.Is(err, ErrCheckerRunning) {
		t.Errorf("second Run = %v, want ErrCheckerRunning", err)
	}
	b.set(modeOK)
	waitState(t, r, StateUp)
	b.set(modeDraining)
	waitState(t, r, StateDraining)

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	want := []string{"r up->down", "r down->up", "r up->draining"}
	if diff := cmp.Diff(want, ch.list()); diff != "" {
		t.Errorf("OnChange calls (-want +got):\n%s", diff)
	}
	r.ReportConnectFailure()
	r.ReportConnectFailure()
	if f.policy.Load() != nil || r.State() != StateDraining {
		t.Errorf("passive reports still act after Run returned: %v", r.State())
	}
}

func TestCheckOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		o    CheckOptions
		ok   bool
	}{
		{"zero", CheckOptions{}, true},
		{"all set", CheckOptions{Interval: time.Second, Timeout: time.Second, Fall: 3, Rise: 1, Path: "/healthz", Host: "h"}, true},
		{"negative interval", CheckOptions{Interval: -1}, false},
		{"negative timeout", CheckOptions{Timeout: -1}, false},
		{"negative fall", CheckOptions{Fall: -1}, false},
		{"relative path", CheckOptions{Path: "health"}, false},
		{"query in path", CheckOptions{Path: "/health?x=1"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.o.Validate(); (err == nil) != tt.ok {
				t.Errorf("Validate = %v, want ok=%v", err, tt.ok)
			}
			if _, err := NewChecker(newFleet(t, Spec{URL: "http://h:1/"}), &tt.o); (err == nil) != tt.ok {
				t.Errorf("NewChecker = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func waitState(t *testing.T, r *Replica, want State) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for r.State() != want {
		if time.Now().After(deadline) {
			t.Fatalf("replica %s is %v, want %v", r.Name(), r.State(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

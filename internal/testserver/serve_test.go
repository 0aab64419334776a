package testserver

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// syncBuffer is a bytes.Buffer safe for concurrent use, for capturing logs.
type syncBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

// Write appends p.
func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// serving is a Server running Serve on a loopback listener.
type serving struct {
	s      *Server
	base   string
	stop   context.CancelFunc
	served chan error
	log    *syncBuffer
}

// startServe runs Serve for a new server with opts on loopback.
func startServe(t *testing.T, opts *Options, drainDelay time.Duration) *serving {
	t.Helper()
	sv := &serving{served: make(chan error, 1), log: &syncBuffer{}}
	opts.Logger = slog.New(slog.NewTextHandler(sv.log, nil))
	s, err := New("replica-k", opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	sv.s, sv.base, sv.stop = s, "http://"+ln.Addr().String(), stop
	go func() { sv.served <- s.Serve(ctx, ln, drainDelay) }()
	return sv
}

// callAsync calls tool on cs in the background; the result arrives on the
// returned channel.
func callAsync(cs *mcp.ClientSession, tool string, args map[string]any) <-chan error {
	done := make(chan error, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
		if err == nil && res.IsError {
			err = context.Canceled // any non-nil error: the tool failed
		}
		done <- err
	}()
	return done
}

// waitInflight waits until s has a call in flight.
func waitInflight(t *testing.T, s *Server) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		s.inflight.mu.Lock()
		n := s.inflight.n
		s.inflight.mu.Unlock()
		if n > 0 {
			return
		}
	}
	t.Fatal("no call in flight")
}

// TestServeDrains checks that after its context ends Serve reports draining
// while still serving both eras for the drain delay, lets a call in flight
// finish, and returns well before the grace although a legacy GET stream
// is open.
func TestServeDrains(t *testing.T) {
	// Two seconds of drain: the checks while draining get most of them on
	// a loaded machine. The sleep outlasts the drain; the grace is far off.
	const drainDelay = 2 * time.Second
	sv := startServe(t, &Options{ShutdownGrace: 10 * time.Second}, drainDelay)
	legacy := connect(t, t.Context(), sv.base, legacyVersion, nil)
	modern := connect(t, t.Context(), sv.base, modernVersion, nil)
	if diff := cmp.Diff(healthOK, get(t, http.MethodGet, sv.base+"/health")); diff != "" {
		t.Errorf("/health while serving (-want +got):\n%s", diff)
	}
	slept := callAsync(legacy, "sleep", map[string]any{"seconds": 3})
	waitLoad(t, sv.s, 1, 0)

	sv.stop()
	stopped := time.Now()
	drainingBusy := healthDraining
	drainingBusy.Body = "{\"status\":\"draining\",\"running\":1,\"queued\":0}\n" // the sleep
	if diff := cmp.Diff(drainingBusy, get(t, http.MethodGet, sv.base+"/health")); diff != "" {
		t.Errorf("/health while draining (-want +got):\n%s", diff)
	}
	for _, cs := range []*mcp.ClientSession{legacy, modern} {
		if got := callText(t, t.Context(), cs, "whoami", nil); got != "replica-k" {
			t.Errorf("whoami while draining = %q", got)
		}
	}

	select {
	case err := <-sv.served:
		took := time.Since(stopped)
		if err != nil {
			t.Errorf("Serve = %v, want nil", err)
		}
		if took < drainDelay || took > 6*time.Second {
			t.Errorf("Serve returned %v after cancel, want between %v and 6s", took, drainDelay)
		}
	case <-time.After(12 * time.Second):
		t.Fatal("Serve did not return")
	}
	if err := <-slept; err != nil {
		t.Errorf("sleep in flight across the drain: %v", err)
	}
	if _, err := net.Dial("tcp", strings.TrimPrefix(sv.base, "http://")); err == nil {
		t.Error("listener still accepting after Serve returned")
	}
	checkLifecycleLog(t, sv.log.String())
}

// checkLifecycleLog checks that the log holds the three lifecycle lines and
// nothing per request.
func checkLifecycleLog(t *testing.T, log string) {
	t.Helper()
	var got []string
	for line := range strings.Lines(log) {
		_, msg, _ := strings.Cut(line, "msg=")
		msg, _, _ = strings.Cut(msg, " name=")
		got = append(got, msg)
	}
	want := []string{`"test server serving"`, `"test server draining"`, `"test server stopped"`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("log messages (-want +got):\n%s\nlog:\n%s", diff, log)
	}
}

// TestServeGraceCutsOff checks that Serve stops waiting for a call in flight
// once the grace runs out, and reports it.
func TestServeGraceCutsOff(t *testing.T) {
	sv := startServe(t, &Options{ShutdownGrace: 200 * time.Millisecond}, 50*time.Millisecond)
	modern := connect(t, t.Context(), sv.base, modernVersion, nil)
	slept := callAsync(modern, "sleep", map[string]any{"seconds": 10})
	waitInflight(t, sv.s)

	sv.stop()
	stopped := time.Now()
	select {
	case err := <-sv.served:
		if err == nil || !strings.Contains(err.Error(), "shutting down") {
			t.Errorf("Serve = %v, want a shutting-down error", err)
		}
		if took := time.Since(stopped); took > 2*time.Second {
			t.Errorf("Serve took %v after cancel, want about 250ms", took)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return")
	}
	select {
	case err := <-slept:
		if err == nil {
			t.Error("sleep cut off by shutdown succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("sleep call did not end after shutdown")
	}
}

// TestServeGraceCountsKilled checks the kill count when the grace runs out:
// the call running is killed and counted, the one waiting for its slot is
// ended but not counted, and the stopped log line says so.
func TestServeGraceCountsKilled(t *testing.T) {
	sv := startServe(t, &Options{ShutdownGrace: 200 * time.Millisecond, Slots: 1}, 0)
	cs := connect(t, t.Context(), sv.base, legacyVersion, nil)
	running := callAsync(cs, "sleep", map[string]any{"seconds": 10})
	queued := callAsync(cs, "sleep", map[string]any{"seconds": 10})
	waitLoad(t, sv.s, 1, 1)

	sv.stop()
	if err := <-sv.served; err == nil {
		t.Error("Serve = nil, want the grace's error")
	}
	if got := sv.s.Killed(); got != 1 {
		t.Errorf("Killed = %d, want 1", got)
	}
	for name, done := range map[string]<-chan error{"running": running, "queued": queued} {
		if err := <-done; err == nil {
			t.Errorf("the %s sleep succeeded", name)
		}
	}
	if log := sv.log.String(); !strings.Contains(log, `msg="test server stopped" name=replica-k killed=1`) {
		t.Errorf("no stopped line with killed=1 in the log:\n%s", log)
	}
}

package stdio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// TwinSuffix ends the name of a replica's stateless twin: the twin of
// child stdio-1 is stdio-1-2026, what {child} stands for in its
// environment.
const TwinSuffix = "-2026"

// discoverID is the id of the twin's probe: a string, where the mux hands
// out numbers.
const discoverID = `"mcpfleet-discover"`

// errNotNative: the child answered the probe without 2026-07-28 among its
// versions, or with an error.
var errNotNative = errors.New("the server does not speak " + statelessVersion)

// probeState is what a stateless twin's probes found.
type probeState int

const (
	probeUnknown probeState = iota // not answered yet
	probeNative                    // answered with 2026-07-28 once
	probeRefused                   // does not speak 2026-07-28: stopped for good
)

// handshake is the gateway's first exchange with a new run of the child:
// initialize, or for a stateless twin the probe.
func (c *Child) handshake(ctx context.Context, p *process) (json.RawMessage, error) {
	if c.opts.Stateless {
		return c.probeDiscover(ctx, p)
	}
	return c.initialize(ctx, p)
}

// probeDiscover asks a new run of a stateless twin server/discover, in the
// 2026-07-28 era as that era asks it (SEP-2575: the version and the
// client's capabilities in the request's _meta; the twin's connection is
// no client's, so it declares none, and each request declares its own).
// It returns the result when its supportedVersions name 2026-07-28;
// errNotNative when they do not, or the answer is an error. A server of
// the Go SDK takes the connection's first request of the era as setting
// the connection's era, so the twin's results are the era's own
// (input_required included, SEP-2322).
func (c *Child) probeDiscover(ctx context.Context, p *process) (json.RawMessage, error) {
	req := `{"jsonrpc":"2.0","id":` + discoverID + `,"method":"server/discover","params":{"_meta":{"` +
		metaProtocolVersion + `":"` + statelessVersion + `","` + metaClientCapabilities + `":{},"` +
		metaClientInfo + `":{"name":"mcpfleet","version":"1"}}}}`
	result, err := c.exchange(ctx, p, discoverID, req)
	var answer *answerError
	switch {
	case errors.As(err, &answer):
		return nil, fmt.Errorf("probing the child: %w (%w)", errNotNative, err)
	case err != nil:
		return nil, fmt.Errorf("probing the child: %w", err)
	}
	var d struct {
		Versions []string `json:"supportedVersions"`
	}
	if json.Unmarshal(result, &d) != nil || !slices.Contains(d.Versions, statelessVersion) {
		return nil, fmt.Errorf("probing the child: %w: its versions are %v", errNotNative, d.Versions)
	}
	return result, nil
}

// settleProbe reports whether a stateless twin whose run ended with err
// is refused (its supervisor then returns): a probe answered without
// 2026-07-28, or a first run that ended (an error, a timeout, an exit)
// before it answered. A twin that answered once is restarted as any
// child.
func (c *Child) settleProbe(err error) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.probe == probeNative && !errors.Is(err, errNotNative) {
		return false
	}
	c.probe = probeRefused
	return true
}

func (c *Child) probed() probeState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.probe
}

// twin is a replica's stateless twin: a second child of the same command,
// never initialized, that serves the replica's 2026-07-28 requests in
// that era itself, where the replica's child, initialized in 2025-11-25
// for the sessions it multiplexes, can serve them only by translation. It
// starts at the replica's first 2026-07-28 request, so that a fleet of
// older clients runs no second process. Its methods are safe for
// concurrent use; a nil *twin is off.
type twin struct {
	opts Options

	// hub shares one subscriptions/listen on the child among the
	// clients' (listenhub.go).
	hub listenHub

	// wait bounds how long after the twin's start requests wait for its
	// probe (twinWait; tests shorten it).
	wait time.Duration

	mu      sync.Mutex // guards the fields below
	child   *Child     // nil before the first 2026-07-28 request
	started time.Time  // when child was started
	closed  bool
}

// twinWait is how long after a twin starts the 2026-07-28 requests wait for
// its probe's answer. A server that answers no request before initialize
// (some drop them) would otherwise hold them for the whole init timeout;
// past it they are translated on the child while the probe goes on, and a
// request that comes later does not wait at all.
const twinWait = 10 * time.Second

func newTwin(opts *Options) *twin {
	if opts == nil {
		return nil
	}
	o := *opts
	o.Stateless, o.Once = true, false
	return &twin{opts: o, wait: twinWait}
}

// native returns the child that serves a 2026-07-28 request natively,
// starting it at the first call and waiting while its probe runs (until
// the twin's wait has passed since its start, or ctx ends); nil when the
// server does not speak 2026-07-28, has not said so in time, or the twin
// is off or stopped: the request is then translated.
func (t *twin) native(ctx context.Context) *Child {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	if t.child == nil && !t.closed {
		t.child, t.started = Start(t.opts), time.Now()
	}
	c, until := t.child, t.started.Add(t.wait)
	t.mu.Unlock()
	if c == nil {
		return nil
	}
	switch c.probed() {
	case probeNative:
		return c
	case probeRefused:
		return nil
	}
	ctx, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	_ = c.Ready(ctx)
	if c.probed() != probeNative {
		return nil
	}
	return c
}

// serving returns the twin's child when it serves 2026-07-28 requests
// natively now, without starting it; nil otherwise.
func (t *twin) serving() *Child {
	if c := t.running(); c != nil && c.probed() == probeNative {
		return c
	}
	return nil
}

// running returns the twin's child; nil before it started or when off.
func (t *twin) running() *Child {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.child
}

// close stops the twin's process group; no twin starts after it.
// Idempotent.
func (t *twin) close() {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.closed = true
	c := t.child
	t.mu.Unlock()
	if c != nil {
		c.Close()
	}
}

package stdio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
)

// ProtocolVersion is the version the gateway offers a child at initialize:
// the newest it speaks as a client; a child that does not accept it
// answers with the newest one it does (MCP 2025-11-25, "Lifecycle",
// "Version Negotiation").
const ProtocolVersion = "2025-11-25"

// Errors of a child's sessions.
var (
	// ErrNotReady: the child is not running and initialized (starting,
	// restarting after a crash, or stopped).
	ErrNotReady = errors.New("the stdio child is not ready")
	// ErrSessionEnded: the session ended (closed, or its child went
	// away); its client should initialize again.
	ErrSessionEnded = errors.New("the session on the stdio child ended")
)

// Options configure a Child. The zero value of each field means its
// default.
type Options struct {
	// Name is the child's stable name: what {child} stands for, the
	// replica in errors, logs and metrics.
	Name string
	// Argv is the command; required.
	Argv []string
	// Env is the child's whole environment (see Environ).
	Env []string
	// Dir is the working directory; "" means the gateway's.
	Dir string
	// MaxLineBytes bounds a line on the child's stdout; 0 means 16 MiB.
	// A longer line loses the child.
	MaxLineBytes int
	// StderrLines is how many of the child's last stderr lines are kept;
	// 0 means 200.
	StderrLines int
	// WriteTimeout bounds a write to the child's stdin; 0 means 30s. A
	// write that does not finish in time loses the child.
	WriteTimeout time.Duration
	// Grace is how long the child's group has after SIGTERM before
	// SIGKILL; 0 means 5s.
	Grace time.Duration
	// InitTimeout bounds the start and initialize of a child (npx may
	// download first); 0 means 2m.
	InitTimeout time.Duration
	// Backoff spaces the restarts of a child that exits.
	Backoff Backoff
	// Once runs the child one time: when it exits it is not started
	// again, and Done closes (a child of one session, whose state went
	// with it).
	Once bool
	// Stateless makes the child a replica's stateless twin (twin.go):
	// never initialized, its first message a server/discover of the
	// 2026-07-28 era; a child that does not answer it with that version
	// is stopped for good, and Refused reports it.
	Stateless bool
	// Logger receives the child's starts, exits and skipped lines; nil
	// means none.
	Logger *slog.Logger
}

func (o *Options) defaults() {
	if o.MaxLineBytes <= 0 {
		o.MaxLineBytes = 16 << 20
	}
	if o.StderrLines <= 0 {
		o.StderrLines = 200
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 30 * time.Second
	}
	if o.Grace <= 0 {
		o.Grace = 5 * time.Second
	}
	if o.InitTimeout <= 0 {
		o.InitTimeout = 2 * time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// A Child is one stdio server the gateway runs, restarts and multiplexes
// client sessions on. Its methods are safe for concurrent use.
type Child struct {
	opts   Options
	cancel context.CancelFunc
	done   chan struct{} // closed when the supervisor has returned

	mu       sync.Mutex // guards the fields below
	mux      *Mux
	proc     *process
	gen      int // incarnation: a session belongs to one
	changed  int // tools list_changed notifications of this incarnation
	init     json.RawMessage
	initOf   initFacts // read from init once
	sessions map[SessionID]*Session
	nextSID  SessionID
	restarts int
	probe    probeState // a stateless twin's: what its probes found
	lastExit string
	stderr   *lineRing // the current or last run's
	owed     [][]byte  // messages for the child of sessions ended under mu
}

// Start starts the child and keeps it running, restarting it with
// backoff, until Close.
func Start(opts Options) *Child {
	opts.defaults()
	ctx, cancel := context.WithCancel(context.Background())
	c := &Child{opts: opts, cancel: cancel, done: make(chan struct{}), mux: NewMux(), sessions: map[SessionID]*Session{}}
	go c.supervise(ctx)
	return c
}

// Name returns the child's stable name.
func (c *Child) Name() string { return c.opts.Name }

// Done is closed when the child is stopped for good: after Close, or
// when a child of Options.Once exited.
func (c *Child) Done() <-chan struct{} { return c.done }

// Close stops the child's whole process group and ends its sessions;
// idempotent.
func (c *Child) Close() {
	c.cancel()
	<-c.done
}

// supervise runs the child, again and again, until ctx ends.
func (c *Child) supervise(ctx context.Context) {
	defer close(c.done)
	log := c.opts.Logger.With("child", c.opts.Name)
	failures := 0
	for {
		p, up, err := c.run(ctx)
		if p != nil {
			lines, _ := p.stderr.last()
			level := slog.LevelWarn
			if ctx.Err() != nil {
				level = slog.LevelInfo // stopped, as asked
			}
			log.Log(context.Background(), level, "stdio child exited", "pid", p.pid, "status", p.exitStatus(), "up", up.Round(time.Millisecond).String(), "reason", errString(err), "stderr", tailLines(lines, 20))
		} else if ctx.Err() == nil {
			log.Error("stdio child did not start", "error", err)
		}
		if ctx.Err() != nil || c.opts.Once {
			return
		}
		if c.opts.Stateless && c.settleProbe(err) {
			log.Info("the stdio server does not speak "+statelessVersion+": the replica's "+statelessVersion+" requests are translated", "reason", errString(err))
			return
		}
		var delay time.Duration
		delay, failures = c.opts.Backoff.Next(failures, up)
		c.mu.Lock()
		c.restarts++
		c.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func tailLines(lines []string, n int) []string {
	if len(lines) > n {
		return lines[len(lines)-n:]
	}
	return lines
}

// run starts and initializes one incarnation, serves it until it is
// lost or ctx ends, then stops its group. It returns the process (nil if
// it never started), how long it was up, and why it ended.
func (c *Child) run(ctx context.Context) (*process, time.Duration, error) {
	o := c.opts
	p, err := startProcess(o.Argv, o.Env, o.Dir, o.MaxLineBytes, o.StderrLines, o.WriteTimeout)
	if err != nil {
		return nil, 0, err
	}
	c.mu.Lock()
	c.stderr = p.stderr
	c.mu.Unlock()
	result, err := c.handshake(ctx, p)
	if err != nil {
		p.stop(o.Grace)
		return p, time.Since(p.started), err
	}
	facts := readInitFacts(result)
	c.mu.Lock()
	c.proc, c.init, c.initOf = p, result, facts
	if c.opts.Stateless {
		c.probe = probeNative
	}
	c.gen++
	c.changed = 0
	c.mu.Unlock()
	read := make(chan error, 1)
	go func() { read <- c.read(p) }()
	select {
	case err = <-read:
	case <-p.exited:
		// What it wrote before it went is still read, while nothing else
		// of its group holds its stdout.
		select {
		case err = <-read:
		case <-time.After(100 * time.Millisecond):
		}
		err = errors.Join(errors.New("the child exited"), err)
	case <-ctx.Done():
		err = ctx.Err()
	}
	c.lose(p)
	p.stop(o.Grace)
	return p, time.Since(p.started), err
}

// lose ends the incarnation p: every call pending on it is answered with
// the replica_lost error, and its sessions end.
func (c *Child) lose(p *process) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc != p {
		return
	}
	for _, q := range c.mux.Lost() {
		if s := c.sessions[q.Session]; s != nil {
			s.deliverLocked(lostAnswer(c.opts.Name, q.ID))
		}
	}
	for id, s := range c.sessions {
		s.endLocked()
		delete(c.sessions, id)
	}
	c.mux, c.proc, c.init, c.initOf, c.owed = NewMux(), nil, nil, initFacts{}, nil
	c.lastExit = time.Now().UTC().Format(time.RFC3339)
}

// initFacts are what a 2026-07-28 request needs of the child's
// initialize result, read once per run rather than once per request.
type initFacts struct {
	Version    string          `json:"protocolVersion"`
	ServerInfo json.RawMessage `json:"serverInfo"`
}

func readInitFacts(result json.RawMessage) initFacts {
	var f initFacts
	_ = json.Unmarshal(result, &f)
	return f
}

// initialized returns the child's initialize result and what was read
// of it; nil and none while it is not running and initialized. Unlike
// Info it copies nothing (Info copies the stderr lines).
func (c *Child) initialized() (json.RawMessage, initFacts) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.init, c.initOf
}

// read routes the child's stdout until it ends; a line that is not JSON
// is logged (bounded) and skipped, as the MCP stdio transport says a
// server must not write one.
func (c *Child) read(p *process) error {
	log := c.opts.Logger.With("child", c.opts.Name)
	for {
		line, err := p.stdout.next()
		if err != nil {
			return fmt.Errorf("reading the child's stdout: %w", err)
		}
		if len(line) == 0 {
			continue
		}
		// The line is the reader's until its next call: what the mux
		// routes is a copy of its own (FromChild), and the line is not
		// kept past this turn.
		c.mu.Lock()
		r, err := c.mux.FromChild(line)
		if err == nil && r.Msg != nil {
			c.deliverLocked(r)
		}
		if r.ToolsChanged {
			c.changed++
		}
		owed := c.takeOwedLocked()
		c.mu.Unlock()
		if err != nil {
			log.Warn("stdio child wrote a line that is not a JSON-RPC message; skipped", "line", printable(line, 200))
		} else if r.Reply != nil {
			owed = append(owed, r.Reply)
		}
		for _, m := range owed {
			if err := p.write(m); err != nil {
				p.kill()
				return err
			}
		}
	}
}

// takeOwedLocked returns the messages sessions that ended owe the child,
// and forgets them.
func (c *Child) takeOwedLocked() [][]byte {
	owed := c.owed
	c.owed = nil
	return owed
}

func (c *Child) deliverLocked(r Route) {
	if r.Sessions != nil {
		for _, id := range r.Sessions {
			if s := c.sessions[id]; s != nil {
				s.deliverLocked(r.Msg)
			}
		}
		return
	}
	if r.Alone {
		if len(c.sessions) == 1 {
			for _, s := range c.sessions {
				s.deliverLocked(r.Msg)
			}
		}
		return
	}
	if !r.Broadcast {
		if s := c.sessions[r.To]; s != nil {
			s.deliverLocked(r.Msg)
		}
		return
	}
	for _, s := range c.sessions {
		s.deliverLocked(r.Msg)
	}
}

// toolsRevision names the child's tool list as it is now: its run, and
// the tools list_changed notifications of that run.
func (c *Child) toolsRevision() toolsRev {
	c.mu.Lock()
	defer c.mu.Unlock()
	return toolsRev{gen: c.gen, changed: c.changed}
}

// printable is at most n bytes of b for a log line.
func printable(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

func lostAnswer(replica string, id json.RawMessage) []byte {
	b := mcpmsg.ReplicaLost(replica, true).AppendResponse(nil, id)
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	return b
}

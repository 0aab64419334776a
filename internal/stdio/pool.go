package stdio

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Errors of a Pool's Take.
var (
	// ErrPoolFull: every place of the pool holds a session (max_sessions).
	ErrPoolFull = errors.New("every per-session stdio child is taken (max_sessions)")
	// ErrPoolClosed: the pool is shutting down.
	ErrPoolClosed = errors.New("the per-session stdio children are stopping")
)

// PoolOptions configure a Pool. The zero value of each field means its
// default.
type PoolOptions struct {
	// Name prefixes the children's names: Name-s-<random>, a name no
	// other child had, so that a {child} file holds one session's state.
	Name string
	// MaxSessions bounds the children, leased and warm together; 0 means 64.
	MaxSessions int
	// Warm is how many children wait started and initialized for the
	// next sessions; 0 means none.
	Warm int
	// IdleTimeout ends a session without a request for this long; 0: never.
	IdleTimeout time.Duration
	// MaxAge ends a session this old; 0: never.
	MaxAge time.Duration
	// Backoff spaces the starts of warm children after one exited before
	// any session took it (a command that cannot start is not run in a
	// loop).
	Backoff Backoff
	// Child returns the options of the child called name; required. Its
	// Once is set: a child of one session is never restarted.
	Child func(name string) (Options, error)
	// Logger receives the sessions' ends; nil means none.
	Logger *slog.Logger
}

// A Pool runs one child per client session (per_session: true): a session
// takes a warm child or starts one, and when the session ends (closed,
// idle, too old, or its child exited) the child's process group is
// stopped. Its methods are safe for concurrent use.
type Pool struct {
	opts   PoolOptions
	limits poolLimits
	cancel context.CancelFunc
	done   chan struct{} // closed when the sweeper has returned
	ends   sync.WaitGroup

	mu        sync.Mutex // guards the fields below
	warm      []*Child
	leases    map[*Lease]struct{}
	failures  int       // warm children in a row that exited untaken
	notBefore time.Time // no warm child starts before
	closed    bool
}

// NewPool starts a pool and its warm children.
func NewPool(opts PoolOptions) *Pool {
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = 64
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Pool{
		opts:   opts,
		limits: poolLimits{Max: opts.MaxSessions, Warm: min(opts.Warm, opts.MaxSessions), Idle: opts.IdleTimeout, MaxAge: opts.MaxAge},
		cancel: cancel, done: make(chan struct{}), leases: map[*Lease]struct{}{},
	}
	p.refill(time.Now())
	go p.sweep(ctx)
	return p
}

// A Lease is one session's child: Session is the session on it; Close
// ends the session and stops the child.
type Lease struct {
	pool    *Pool
	child   *Child
	session *Session
	opened  time.Time
	once    sync.Once

	mu    sync.Mutex // guards quiet
	quiet func(now time.Time) time.Duration
}

// Take gives a new session a child of its own: a warm one, or one it
// starts, once initialized (or ctx ends). ErrPoolFull past MaxSessions.
func (p *Pool) Take(ctx context.Context) (*Lease, error) {
	now := time.Now()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, ErrPoolClosed
	}
	if !p.limits.admits(p.countsLocked()) {
		p.mu.Unlock()
		return nil, ErrPoolFull
	}
	l := &Lease{pool: p, opened: now}
	p.leases[l] = struct{}{} // the place is held from now
	c := p.popWarmLocked()
	var err error
	if c == nil {
		c, err = p.startLocked()
	}
	l.child = c
	p.mu.Unlock()
	if err != nil {
		l.Close()
		return nil, err
	}
	p.refill(now)
	var s *Session
	if err = c.Ready(ctx); err == nil {
		s, err = c.Open()
	}
	if err != nil {
		l.Close()
		return nil, err
	}
	p.mu.Lock()
	l.session, p.failures = s, 0
	p.mu.Unlock()
	return l, nil
}

// Session returns the session on the lease's child.
func (l *Lease) Session() *Session { return l.session }

// Child returns the lease's child.
func (l *Lease) Child() *Child { return l.child }

// SetQuiet tells the pool how long the session has been without a
// request at now (0 while one is in flight), for idle_timeout; without
// it the session counts as quiet since it opened.
func (l *Lease) SetQuiet(f func(now time.Time) time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.quiet = f
}

func (l *Lease) quietAt(now time.Time) time.Duration {
	l.mu.Lock()
	f := l.quiet
	l.mu.Unlock()
	if f == nil {
		return now.Sub(l.opened)
	}
	return f(now)
}

// Close ends the session, stops the child's process group (SIGTERM, then
// SIGKILL after its grace) and frees its place; idempotent. It returns
// once the group is stopped.
func (l *Lease) Close() {
	l.once.Do(func() {
		p := l.pool
		p.mu.Lock()
		s, c := l.session, l.child
		p.mu.Unlock()
		if s != nil {
			s.Close()
		}
		if c != nil {
			c.Close()
		}
		p.mu.Lock()
		delete(p.leases, l)
		p.mu.Unlock()
		p.refill(time.Now())
	})
}

func (p *Pool) countsLocked() poolCounts {
	return poolCounts{Leased: len(p.leases), Warm: len(p.warm)}
}

// popWarmLocked takes the oldest warm child still running; nil if none.
func (p *Pool) popWarmLocked() *Child {
	for len(p.warm) > 0 {
		c := p.warm[0]
		p.warm = p.warm[1:]
		if !exited(c) {
			return c
		}
	}
	return nil
}

func exited(c *Child) bool {
	select {
	case <-c.Done():
		return true
	default:
		return false
	}
}

// startLocked starts a child of a new name.
func (p *Pool) startLocked() (*Child, error) {
	var b [5]byte
	_, _ = rand.Read(b[:])
	name := p.opts.Name + "-s-" + hex.EncodeToString(b[:])
	opts, err := p.opts.Child(name)
	if err != nil {
		return nil, fmt.Errorf("per-session stdio child %s: %w", name, err)
	}
	opts.Once = true
	return Start(opts), nil
}

// refill drops the warm children that exited untaken (spacing the next
// starts by the backoff) and starts those the pool lacks.
func (p *Pool) refill(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	alive := p.warm[:0]
	for _, c := range p.warm {
		if !exited(c) {
			alive = append(alive, c)
			continue
		}
		var delay time.Duration
		delay, p.failures = p.opts.Backoff.Next(p.failures, 0)
		p.notBefore = now.Add(delay)
		p.opts.Logger.Warn("a warm per-session stdio child exited before any session took it", "child", c.Name(), "next_start_in", delay.String())
	}
	p.warm = alive
	if p.closed || now.Before(p.notBefore) {
		return
	}
	for range p.limits.toStart(p.countsLocked()) {
		c, err := p.startLocked()
		if err != nil {
			p.opts.Logger.Error("starting a warm stdio child", "error", err)
			return
		}
		p.warm = append(p.warm, c)
	}
}

// sweep ends the sessions past idle_timeout or max age, and keeps the
// warm children counted, until ctx ends.
func (p *Pool) sweep(ctx context.Context) {
	defer close(p.done)
	tick := time.NewTicker(p.limits.sweepEvery())
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			p.expire(now)
			p.refill(now)
		}
	}
}

// expire ends, each in its own goroutine, the sessions due at now.
func (p *Pool) expire(now time.Time) {
	p.mu.Lock()
	var open []*Lease
	for l := range p.leases {
		if l.session != nil { // not while its child starts
			open = append(open, l)
		}
	}
	p.mu.Unlock()
	for _, l := range open {
		if why := p.limits.expiry(l.opened, l.quietAt(now), now); why != "" {
			p.opts.Logger.Info("per-session stdio child stopped: its session ended", "child", l.child.Name(), "reason", why)
			p.ends.Go(l.Close)
		}
	}
}

// Close stops every child of the pool, at once, and waits for their
// process groups; idempotent.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	children := p.warm
	p.warm = nil
	var leases []*Lease
	for l := range p.leases {
		leases = append(leases, l)
	}
	p.mu.Unlock()
	p.cancel()
	<-p.done
	var wg sync.WaitGroup
	for _, c := range children {
		wg.Go(c.Close)
	}
	for _, l := range leases {
		wg.Go(l.Close)
	}
	wg.Wait()
	p.ends.Wait()
}

// Warm returns the state of the pool's warm children now.
func (p *Pool) Warm() []Info {
	p.mu.Lock()
	ws := append([]*Child(nil), p.warm...)
	p.mu.Unlock()
	var warm []Info
	for _, c := range ws {
		warm = append(warm, c.Info())
	}
	return warm
}

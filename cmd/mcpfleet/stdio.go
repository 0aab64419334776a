package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/admin"
	"github.com/mcpfleet/mcpfleet/internal/config"
	"github.com/mcpfleet/mcpfleet/internal/gateway"
	"github.com/mcpfleet/mcpfleet/internal/stdio"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// stdioFleet is a service's stdio children (upstreams[].stdio): started
// before its fleet, each served by a bridge on a unix socket as a replica,
// replaced one by one on a reload that changes them (stdio_reload.go),
// stopped after its gateway.
type stdioFleet struct {
	socks *stdio.Sockets
	log   *slog.Logger

	mu      sync.Mutex    // guards kids, leaving
	kids    []*stdioKid   // by name, in the config's order
	leaving []*stdioKid   // removed by a reload, draining
	pools   []*stdio.Pool // of the per_session upstreams
}

// childNames returns the names of upstream u's children.
func childNames(u *config.Upstream) []string {
	n := u.Stdio.WithDefaults().Processes
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%d", u.StdioName(), i+1)
	}
	return names
}

// startStdio starts the children of cfg's stdio upstreams; nil when it
// has none.
func startStdio(cfg *config.Config, log *slog.Logger) (*stdioFleet, error) {
	var f *stdioFleet
	for i := range cfg.Upstreams {
		u := &cfg.Upstreams[i]
		if !u.IsStdio() {
			continue
		}
		if f == nil {
			socks, err := stdio.NewSockets(log)
			if err != nil {
				return nil, err
			}
			f = &stdioFleet{socks: socks, log: log}
		}
		if err := f.start(u, cfg, log); err != nil {
			f.close()
			return nil, err
		}
	}
	return f, nil
}

// start starts upstream u's children.
func (f *stdioFleet) start(u *config.Upstream, cfg *config.Config, log *slog.Logger) error {
	kids, err := kidSpecs(u, cfg, log)
	if err != nil {
		return err
	}
	if pool := startPool(u, cfg, log); pool != nil {
		f.pools = append(f.pools, pool)
		for _, k := range kids {
			k.pool = pool
		}
	}
	for _, k := range kids {
		if err := f.serve(k); err != nil {
			return err
		}
	}
	return nil
}

// kidSpecs are what upstream u's children run with; an error for an
// env file that cannot be read.
func kidSpecs(u *config.Upstream, cfg *config.Config, log *slog.Logger) ([]*stdioKid, error) {
	s := u.Stdio.WithDefaults()
	lo, hi, err := config.ParseBackoff(s.RestartBackoff)
	if err != nil {
		return nil, usageError{err}
	}
	var kids []*stdioKid
	for _, name := range childNames(u) {
		opts, err := childOptions(name, &s, cfg, lo, hi, log)
		if err != nil {
			return nil, usageError{err}
		}
		k := &stdioKid{idle: time.Duration(cfg.SessionMaxAge), opts: opts, perSession: perSessionOf(&s)}
		if s.Native() {
			twin, err := childOptions(name+stdio.TwinSuffix, &s, cfg, lo, hi, log)
			if err != nil {
				return nil, usageError{err}
			}
			k.twin = &twin
		}
		kids = append(kids, k)
	}
	return kids, nil
}

// childOptions are what the child called name of stdio upstream s runs
// with; an error for an env file that cannot be read.
func childOptions(name string, s *config.Stdio, cfg *config.Config, lo, hi time.Duration, log *slog.Logger) (stdio.Options, error) {
	env, err := stdio.Environ(name, s.Env, s.EnvFiles, os.Getenv, os.ReadFile)
	if err != nil {
		return stdio.Options{}, fmt.Errorf("stdio child %s: %w", name, err)
	}
	return stdio.Options{
		Name: name, Argv: s.Command, Env: env, Dir: stdio.Expand(s.Dir, name),
		MaxLineBytes: int(s.MaxLineBytes), StderrLines: s.StderrLines,
		WriteTimeout: time.Duration(cfg.WriteTimeout), Grace: time.Duration(cfg.Grace),
		Backoff: stdio.Backoff{Min: lo, Max: hi}, Logger: log,
	}, nil
}

// startPool starts the pool of per-session children of upstream u; nil
// unless its per_session is on.
func startPool(u *config.Upstream, cfg *config.Config, log *slog.Logger) *stdio.Pool {
	s := u.Stdio.WithDefaults()
	if !s.PerSession {
		return nil
	}
	lo, hi, _ := config.ParseBackoff(s.RestartBackoff) // kidSpecs checked it
	return stdio.NewPool(stdio.PoolOptions{
		Name: u.StdioName(), MaxSessions: s.MaxSessions, Warm: s.WarmChildren(),
		IdleTimeout: time.Duration(s.IdleTimeout), MaxAge: time.Duration(cfg.SessionMaxAge),
		Backoff: stdio.Backoff{Min: lo, Max: hi}, Logger: log,
		Child: func(name string) (stdio.Options, error) { return childOptions(name, &s, cfg, lo, hi, log) },
	})
}

// dial connects to the children's bridges, and to anything else over
// the network; nil f dials the network alone.
func (f *stdioFleet) dial() func(ctx context.Context, network, addr string) (net.Conn, error) {
	if f == nil {
		return nil
	}
	var d net.Dialer
	return f.socks.Dial(d.DialContext)
}

// wire makes the gateway's forwarders and tool listings reach the
// children.
func (f *stdioFleet) wire(cfg *config.Config, opts *gateway.Options) error {
	opts.Dial = f.dial()
	opts.Local = f.socks.Handler
	opts.ChildView = f.view
	if opts.Tools == nil {
		return nil
	}
	auth, err := readAuthorization("tools.probe_authorization_file", cfg.Tools.ProbeAuthorizationFile)
	if err != nil {
		return err
	}
	client := &http.Client{
		Transport:     &http.Transport{DialContext: f.dial()},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       5 * time.Second,
	}
	opts.Tools.List = toolLister(auth, client)
	return nil
}

// view is the fleet view of the child called name; nil for a replica
// that is none.
func (f *stdioFleet) view(name string, now time.Time) (*admin.Process, []string) {
	k := f.kid(name)
	if k == nil {
		return nil, nil
	}
	i := k.roll.Child().Info()
	p := &admin.Process{PID: i.PID, Restarts: i.Restarts, Sessions: i.Sessions}
	if !i.Started.IsZero() {
		at := i.Started.UTC()
		p.Started, p.UptimeSeconds = &at, max(0, now.Sub(i.Started).Seconds())
	}
	for _, c := range k.roll.SessionChildren() {
		p.SessionChildren = append(p.SessionChildren, sessionChild(c, now))
	}
	if c, ok := k.roll.StatelessChild(); ok {
		p.StatelessChild = &admin.StatelessChild{SessionChild: sessionChild(c, now), Restarts: c.Restarts, State: c.Probe}
	}
	p.Sessions += len(p.SessionChildren)
	return p, i.Stderr
}

// sessionChild is the fleet view of a session's own child.
func sessionChild(i stdio.Info, now time.Time) admin.SessionChild {
	k := admin.SessionChild{Name: i.Name, PID: i.PID, Stderr: i.Stderr}
	if !i.Started.IsZero() {
		k.UptimeSeconds = max(0, now.Sub(i.Started).Seconds())
	}
	if n := len(k.Stderr); n > 20 {
		k.Stderr = k.Stderr[n-20:]
	}
	return k
}

// checkClient is the health checker's client when a service has stdio
// children: a fresh connection per check, no proxy, no redirect, as the
// checker's own default, through dial.
func (f *stdioFleet) checkClient(timeout time.Duration) *http.Client {
	return &http.Client{
		Transport:     &http.Transport{DialContext: f.dial(), DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       timeout,
	}
}

// close stops every child's process group, at once, and the bridges;
// idempotent, nil-safe.
func (f *stdioFleet) close() {
	if f == nil {
		return
	}
	f.mu.Lock()
	kids := append(slices.Clone(f.kids), f.leaving...)
	f.mu.Unlock()
	var wg sync.WaitGroup
	for _, k := range kids {
		wg.Go(k.roll.Close)
	}
	for _, p := range f.pools {
		wg.Go(p.Close)
	}
	wg.Wait()
	f.socks.Close()
}

// stdioSpecs are the replicas of upstream u's children.
func stdioSpecs(u *config.Upstream) []upstream.Spec {
	var specs []upstream.Spec
	for _, name := range childNames(u) {
		specs = append(specs, upstream.Spec{Name: name, URL: stdio.URL(name)})
	}
	return specs
}

// stdioFlag applies serve's --stdio and --processes to cfg: one stdio
// upstream in place of the config's upstreams.
func stdioFlag(cfg *config.Config, command string, processes int, urls, givenProcesses bool) error {
	switch {
	case command == "" && givenProcesses:
		return fmt.Errorf("--processes: only with --stdio")
	case command == "":
		return nil
	case urls:
		return fmt.Errorf("--stdio: use either --stdio or --upstream, not both")
	case processes < 0:
		return fmt.Errorf("--processes: must not be negative, got %d", processes)
	}
	argv, err := stdio.SplitCommand(command)
	if err != nil {
		return fmt.Errorf("--stdio: %w", err)
	}
	cfg.Upstreams = []config.Upstream{{Stdio: config.Stdio{Command: argv, Processes: processes}}}
	return nil
}

package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"reflect"
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
// stopped after its gateway.
type stdioFleet struct {
	socks    *stdio.Sockets
	children []*stdio.Child
	bridges  map[string]*stdio.Bridge // by child name
	pools    []*stdio.Pool            // of the per_session upstreams
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
			socks, err := stdio.NewSockets()
			if err != nil {
				return nil, err
			}
			f = &stdioFleet{socks: socks, bridges: map[string]*stdio.Bridge{}}
		}
		if err := f.start(u, cfg, log); err != nil {
			f.close()
			return nil, err
		}
	}
	return f, nil
}

// start starts upstream u's children, and its pool of per-session ones.
func (f *stdioFleet) start(u *config.Upstream, cfg *config.Config, log *slog.Logger) error {
	s := u.Stdio.WithDefaults()
	lo, hi, err := config.ParseBackoff(s.RestartBackoff)
	if err != nil {
		return usageError{err}
	}
	childOpts := func(name string) (stdio.Options, error) {
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
	var pool *stdio.Pool
	if s.PerSession {
		pool = stdio.NewPool(stdio.PoolOptions{
			Name: u.StdioName(), MaxSessions: s.MaxSessions, Warm: s.Warm,
			IdleTimeout: time.Duration(s.IdleTimeout), MaxAge: time.Duration(cfg.SessionMaxAge),
			Backoff: stdio.Backoff{Min: lo, Max: hi}, Child: childOpts, Logger: log,
		})
		f.pools = append(f.pools, pool)
	}
	for _, name := range childNames(u) {
		opts, err := childOpts(name)
		if err != nil {
			return usageError{err}
		}
		c := stdio.Start(opts)
		f.children = append(f.children, c)
		b := stdio.NewBridge(c, time.Duration(cfg.SessionMaxAge), pool)
		f.bridges[name] = b
		if err := f.socks.Serve(name, b); err != nil {
			return err
		}
	}
	return nil
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
	for _, c := range f.children {
		if c.Name() != name {
			continue
		}
		i := c.Info()
		p := &admin.Process{PID: i.PID, Restarts: i.Restarts, Sessions: i.Sessions}
		if !i.Started.IsZero() {
			at := i.Started.UTC()
			p.Started, p.UptimeSeconds = &at, max(0, now.Sub(i.Started).Seconds())
		}
		for _, k := range f.bridges[name].SessionChildren() {
			p.SessionChildren = append(p.SessionChildren, sessionChild(k, now))
		}
		p.Sessions += len(p.SessionChildren)
		return p, i.Stderr
	}
	return nil, nil
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
	var wg sync.WaitGroup
	for _, c := range f.children {
		wg.Go(c.Close)
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

// sameStdio reports whether a and b have the same stdio upstreams, in the
// same order: what a reload may keep running as it is.
func sameStdio(a, b *config.Config) bool {
	stdioOf := func(c *config.Config) []config.Upstream {
		var ups []config.Upstream
		for _, u := range c.Upstreams {
			if u.IsStdio() {
				ups = append(ups, u)
			}
		}
		return ups
	}
	return reflect.DeepEqual(stdioOf(a), stdioOf(b))
}

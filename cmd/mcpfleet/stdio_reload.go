package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/config"
	"github.com/mcpfleet/mcpfleet/internal/stdio"
)

// replaceTimeout bounds how long a reload waits for a replacing child to
// start and initialize (npx may download first); past it, the child it
// would replace runs on.
const replaceTimeout = 2 * time.Minute

// stdioKid is one child name of a stdio fleet: what its child runs with,
// and the replica serving it (a stdio.Rolling, whose child a reload may
// replace).
type stdioKid struct {
	opts stdio.Options
	idle time.Duration // the bridge's idle session end
	// twin is what the replica's stateless twin runs with; nil without
	// one (native_stateless: false).
	twin *stdio.Options
	roll *stdio.Rolling
	// perSession is its upstream's per_session settings, and pool the
	// children they run (nil without per_session).
	perSession perSession
	pool       *stdio.Pool
}

// perSession is what a stdio upstream's per_session keys say.
type perSession struct {
	on          bool
	max, warm   int
	idleTimeout time.Duration
}

func perSessionOf(s *config.Stdio) perSession {
	if !s.PerSession {
		return perSession{}
	}
	return perSession{on: true, max: s.MaxSessions, warm: s.WarmChildren(), idleTimeout: time.Duration(s.IdleTimeout)}
}

func (k *stdioKid) name() string { return k.opts.Name }

// serve starts k's child and serves it as a replica; on an error the
// child is stopped.
func (f *stdioFleet) serve(k *stdioKid) error {
	k.roll = stdio.NewRolling(stdio.NewBridge(stdio.Start(k.opts), k.idle, k.pool, k.twin))
	if err := f.socks.Serve(k.name(), k.roll); err != nil {
		k.roll.Close()
		return err
	}
	f.mu.Lock()
	f.kids = append(f.kids, k)
	f.mu.Unlock()
	return nil
}

// sameRun reports whether a child of a would run as one of b: the same
// command, environment (env files read again), directory, line bound,
// stderr ring and backoff. The gateway's write_timeout and grace are not
// compared: they apply to children started later.
func sameRun(a, b stdio.Options) bool {
	return slices.Equal(a.Argv, b.Argv) && slices.Equal(a.Env, b.Env) && a.Dir == b.Dir &&
		a.MaxLineBytes == b.MaxLineBytes && a.StderrLines == b.StderrLines && a.Backoff == b.Backoff
}

// stdioPlan is what a reload does to a service's stdio children.
type stdioPlan struct {
	add     []*stdioKid // names new to the fleet
	replace []*stdioKid // names whose child changed: the new one
	remove  []string    // names that leave the fleet
}

// planStdio compares the children running with those next wants, by
// name.
func planStdio(running, next []*stdioKid) stdioPlan {
	var p stdioPlan
	byName := map[string]*stdioKid{}
	for _, k := range running {
		byName[k.name()] = k
	}
	for _, k := range next {
		old := byName[k.name()]
		switch {
		case old == nil:
			p.add = append(p.add, k)
		case !sameRun(old.opts, k.opts) || (old.twin == nil) != (k.twin == nil):
			p.replace = append(p.replace, k)
		}
		delete(byName, k.name())
	}
	for _, k := range running {
		if byName[k.name()] != nil {
			p.remove = append(p.remove, k.name())
		}
	}
	return p
}

// prepare returns what a reload to cfg does to the fleet; an error (an
// env file that cannot be read) changes nothing. A nil f has no plan.
func (f *stdioFleet) prepare(cfg *config.Config) (stdioPlan, error) {
	if f == nil {
		return stdioPlan{}, nil
	}
	var next []*stdioKid
	for i := range cfg.Upstreams {
		u := &cfg.Upstreams[i]
		if !u.IsStdio() {
			continue
		}
		kids, err := kidSpecs(u, cfg, f.log)
		if err != nil {
			return stdioPlan{}, err
		}
		next = append(next, kids...)
	}
	f.mu.Lock()
	running := slices.Clone(f.kids)
	f.mu.Unlock()
	if err := samePerSession(running, next); err != nil {
		return stdioPlan{}, err
	}
	return planStdio(running, next), nil
}

// samePerSession refuses a reload that adds, removes or changes a
// per_session upstream: its sessions' children run the command they were
// started with, and a pool is not replaced under them.
func samePerSession(running, next []*stdioKid) error {
	kids := func(ks []*stdioKid) map[string]*stdioKid {
		m := map[string]*stdioKid{}
		for _, k := range ks {
			if k.perSession.on {
				m[k.name()] = k
			}
		}
		return m
	}
	was, will := kids(running), kids(next)
	same := len(was) == len(will)
	for name, k := range will {
		old := was[name]
		same = same && old != nil && old.perSession == k.perSession && sameRun(old.opts, k.opts)
	}
	if !same {
		return fmt.Errorf("a reload cannot add, remove or change a per_session stdio upstream: restart instead")
	}
	return nil
}

// begin applies the first half of p, before the fleet's update: the new
// names' children start, and the changed ones are replaced one by one:
// each new child starts, and once it is ready takes the name's new
// sessions while the old one drains for at most grace.
func (f *stdioFleet) begin(p stdioPlan, grace time.Duration) {
	if f == nil {
		return
	}
	for _, k := range p.add {
		if err := f.serve(k); err != nil {
			f.log.Error("reload: stdio child not added", "child", k.name(), "error", err.Error())
		}
	}
	for _, k := range p.replace {
		old := f.kid(k.name())
		if old == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), replaceTimeout)
		err := old.roll.Replace(ctx, stdio.NewBridge(stdio.Start(k.opts), k.idle, old.pool, k.twin), grace)
		cancel()
		if err != nil {
			f.log.Error("reload: stdio child not replaced: the running one goes on", "child", k.name(), "error", err.Error())
			continue
		}
		f.mu.Lock()
		old.opts, old.idle, old.twin = k.opts, k.idle, k.twin
		f.mu.Unlock()
		f.log.Info("reload: stdio child replaced; the old one drains", "child", k.name(), "grace", grace.String())
	}
}

// finish applies the rest of p, once the fleet no longer routes to the
// names p removes: their children drain for at most grace, then stop.
func (f *stdioFleet) finish(p stdioPlan, grace time.Duration) {
	if f == nil {
		return
	}
	for _, name := range p.remove {
		k := f.kid(name)
		if k == nil {
			continue
		}
		f.mu.Lock()
		f.kids = slices.DeleteFunc(f.kids, func(o *stdioKid) bool { return o == k })
		f.leaving = append(f.leaving, k)
		f.mu.Unlock()
		f.log.Info("reload: stdio child removed; it drains", "child", name, "grace", grace.String())
		k.roll.Retire(grace, func() {
			f.socks.Remove(name)
			f.mu.Lock()
			f.leaving = slices.DeleteFunc(f.leaving, func(o *stdioKid) bool { return o == k })
			f.mu.Unlock()
		})
	}
}

func (f *stdioFleet) kid(name string) *stdioKid {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, k := range f.kids {
		if k.name() == name {
			return k
		}
	}
	return nil
}

// hasStdio reports whether cfg has a stdio upstream.
func hasStdio(cfg *config.Config) bool {
	return slices.ContainsFunc(cfg.Upstreams, func(u config.Upstream) bool { return u.IsStdio() })
}

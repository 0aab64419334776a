package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/admin"
	"github.com/mcpfleet/mcpfleet/internal/config"
	"github.com/mcpfleet/mcpfleet/internal/gateway"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
	"github.com/prometheus/client_golang/prometheus"
)

// serviceRun is one MCP service of a running gateway: its fleet, stores,
// gateway and background loops (health checks, DNS discovery).
type serviceRun struct {
	svc    config.Service
	fleet  *upstream.Fleet
	gw     *gateway.Gateway
	stores *stores
	bg     *background
	log    *slog.Logger
	stdio  *stdioFleet // the service's stdio children; nil when none

	adminOnce sync.Once
	admin     http.Handler
}

// serviceSet is every service of a running gateway. With one unnamed
// service (a config without services:) its gateway serves the listener
// itself, as it always has; with services, a gateway.Services routes.
type serviceSet struct {
	reg    *prometheus.Registry
	budget int64 // memory_limit in bytes; 0 for none
	log    *slog.Logger
	sinks  logSinks          // where access log and audit lines go
	router *gateway.Services // nil for the one unnamed service

	mu        sync.Mutex
	runs      []*serviceRun
	adminOpts *admin.Options
}

// startServices starts every service of cfg; if one fails, none runs.
func startServices(cfg config.Config, reg *prometheus.Registry, log *slog.Logger, sinks logSinks, budget int64) (*serviceSet, error) {
	list, err := cfg.ResolveServices()
	if err != nil {
		return nil, usageError{err}
	}
	s := &serviceSet{reg: reg, log: log, sinks: sinks, budget: budget}
	for _, svc := range list {
		sizeToBudget(&svc.Config, budget, len(list))
		run, err := startService(svc, reg, log, sinks, budget)
		if err != nil {
			s.close()
			if svc.Name != "" {
				err = fmt.Errorf("service %s: %w", svc.Name, err)
			}
			return nil, err
		}
		s.runs = append(s.runs, run)
	}
	if len(cfg.Services) > 0 {
		s.router = gateway.NewServices(s.routes(), cfg.ServicesReady == config.ServicesReadyAny)
	}
	return s, nil
}

// startService builds one service's fleet, stores and gateway, and starts
// its background loops.
func startService(svc config.Service, reg *prometheus.Registry, log *slog.Logger, sinks logSinks, budget int64) (*serviceRun, error) {
	cfg := svc.Config
	if svc.Name != "" {
		log = log.With("service", svc.Name)
	}
	kids, err := startStdio(&cfg, log)
	if err != nil {
		return nil, err
	}
	fleet, err := buildFleet(cfg, log)
	if err != nil {
		kids.close()
		return nil, err
	}
	opts, err := gatewayOptions(&cfg)
	if err != nil {
		kids.close()
		return nil, usageError{err}
	}
	if kids != nil {
		if err := kids.wire(&cfg, opts); err != nil {
			kids.close()
			return nil, usageError{err}
		}
	}
	opts.Service, opts.Registry, opts.MemoryLimit, opts.AccessLog = svc.Name, reg, budget, sinks.access
	opts.Audit, opts.AuditSubject = sinks.audit, sinks.auditSubject
	if svc.Name != "" && opts.Keyring != nil {
		// A session or event ID of one service opens at no other.
		opts.Keyring = opts.Keyring.Scoped("service " + svc.Name)
	}
	st, err := buildStores(cfg, opts, log)
	if err != nil {
		kids.close()
		return nil, err
	}
	gw, err := gateway.New(fleet, log, opts)
	if err != nil {
		st.close()
		kids.close()
		return nil, err
	}
	run := &serviceRun{svc: svc, fleet: fleet, gw: gw, stores: st, log: log, stdio: kids}
	if err := run.startBackground(); err != nil {
		gw.Close()
		st.close()
		kids.close()
		return nil, err
	}
	return run, nil
}

// startBackground runs the service's health checks and DNS discovery.
func (run *serviceRun) startBackground() error {
	cfg := &run.svc.Config
	run.bg = newBackground()
	if copts := checkOptions(cfg, run.gw.HealthChanged, run.log); copts != nil {
		if run.stdio != nil {
			copts.Client = run.stdio.checkClient(time.Duration(cfg.HealthCheck.Timeout))
		}
		checker, err := upstream.NewChecker(run.fleet, copts)
		if err != nil {
			run.bg.stop()
			return usageError{err}
		}
		run.bg.wg.Go(func() { _ = checker.Run(run.bg.ctx) })
	}
	if dopts := discoverOptions(cfg, run.log); dopts != nil {
		d, err := upstream.NewDiscoverer(dopts)
		if err != nil {
			run.bg.stop()
			return usageError{err}
		}
		run.bg.wg.Go(func() { d.Run(run.bg.ctx, run.fleet) })
	}
	return nil
}

// close stops the service at once: its loops, its gateway, its stores.
func (run *serviceRun) close() {
	run.bg.stop()
	run.gw.Close()
	run.stores.close()
	run.stdio.close()
}

// retire takes a service out of a running gateway: it takes no new work
// (the router no longer names it), its standalone streams end now, and
// what it still relays gets grace before it is closed.
func (run *serviceRun) retire(grace time.Duration) {
	run.log.Info("service removed: it takes no new work; what it relays gets the grace", "grace", grace.String())
	run.gw.SetDraining()
	run.gw.EndStandaloneStreams()
	go func() {
		time.Sleep(grace)
		run.gw.EndStreamsForShutdown()
		run.close()
		run.log.Info("service closed")
	}()
}

// routes are the router's entries for the services running now; s.mu
// held, or before the set is shared.
func (s *serviceSet) routes() []gateway.Service {
	var out []gateway.Service
	for _, run := range s.runs {
		out = append(out, gateway.Service{Name: run.svc.Name, Hosts: run.svc.Hosts, Default: run.svc.Default, Gateway: run.gw})
	}
	return out
}

func (s *serviceSet) handler() http.Handler {
	if s.router == nil {
		return s.runs[0].gw
	}
	return s.router
}

func (s *serviceSet) names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, run := range s.runs {
		out = append(out, run.svc.Name)
	}
	return out
}

func (s *serviceSet) each(f func(*serviceRun)) {
	s.mu.Lock()
	runs := slices.Clone(s.runs)
	s.mu.Unlock()
	for _, run := range runs {
		f(run)
	}
}

func (s *serviceSet) setDraining() { s.each(func(r *serviceRun) { r.gw.SetDraining() }) }
func (s *serviceSet) endStandaloneStreams() {
	s.each(func(r *serviceRun) { r.gw.EndStandaloneStreams() })
}
func (s *serviceSet) endStreamsForShutdown() {
	s.each(func(r *serviceRun) { r.gw.EndStreamsForShutdown() })
}
func (s *serviceSet) close() { s.each(func(r *serviceRun) { r.close() }) }

// registerAdmin adds the fleet view: the one service's at /, or with
// services, each at /services/<name>/ and the default (else the first)
// at / as well.
func (s *serviceSet) registerAdmin(mux *http.ServeMux, o *admin.Options) {
	s.mu.Lock()
	s.adminOpts = o
	s.mu.Unlock()
	if s.router == nil {
		run := s.runs[0]
		admin.Register(mux, run.gw, &admin.Options{Token: o.Token, Log: o.Log, Tools: run.gw.ToolsHandler()})
		return
	}
	mux.Handle("/services/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/services/"), "/")
		run := s.byName(name)
		if run == nil {
			http.NotFound(w, r)
			return
		}
		http.StripPrefix("/services/"+name, run.adminHandler(o)).ServeHTTP(w, r)
	}))
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		run := s.front()
		if run == nil {
			http.NotFound(w, r)
			return
		}
		run.adminHandler(o).ServeHTTP(w, r)
	}))
}

// adminHandler is the service's fleet view, made once.
func (run *serviceRun) adminHandler(o *admin.Options) http.Handler {
	run.adminOnce.Do(func() {
		mux := http.NewServeMux()
		admin.Register(mux, run.gw, &admin.Options{Token: o.Token, Log: run.log, Tools: run.gw.ToolsHandler()})
		run.admin = mux
	})
	return run.admin
}

func (s *serviceSet) byName(name string) *serviceRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, run := range s.runs {
		if run.svc.Name == name {
			return run
		}
	}
	return nil
}

// front is the service the admin listener's / shows: the default one,
// else the first.
func (s *serviceSet) front() *serviceRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, run := range s.runs {
		if run.svc.Default {
			return run
		}
	}
	if len(s.runs) == 0 {
		return nil
	}
	return s.runs[0]
}

// errShapeChange refuses a reload between one service and services.
var errShapeChange = errors.New("a reload cannot switch between one service and services: restart instead")

// reload applies a re-read configuration: each service's upstreams (and
// max_inflight) where the service stays, its stdio children replaced one
// by one where they changed (stdio_reload.go), new services started,
// removed ones retired with grace; a service whose paths changed, or that
// gets its first stdio upstream, is replaced. Nothing changes unless every
// new service starts.
func (s *serviceSet) reload(cfg config.Config, grace time.Duration) error {
	if (s.router != nil) != (len(cfg.Services) > 0) {
		return errShapeChange
	}
	list, err := cfg.ResolveServices()
	if err != nil {
		return err
	}
	s.mu.Lock()
	old := slices.Clone(s.runs)
	s.mu.Unlock()
	byName := map[string]*serviceRun{}
	for _, run := range old {
		byName[run.svc.Name] = run
	}
	// First what can fail: a changed fleet is checked before anything is
	// applied, new services are started before any is swapped in.
	var started []*serviceRun
	abort := func(err error) error {
		for _, run := range started {
			run.close()
		}
		return err
	}
	next := make([]*serviceRun, 0, len(list))
	keep := map[*serviceRun]bool{}
	plans := map[*serviceRun]stdioPlan{}
	for _, svc := range list {
		run := byName[svc.Name]
		if run != nil && run.stdio == nil && hasStdio(&svc.Config) && s.router == nil {
			return abort(errors.New("the service had no stdio upstream when it started, and a reload does not add the first: restart instead"))
		}
		if run != nil && sameShape(run.svc.Config, svc.Config) && (run.stdio != nil || !hasStdio(&svc.Config)) {
			plan, err := run.checkReload(&svc.Config)
			if err != nil {
				return abort(fmt.Errorf("service %s: %w", svc.Name, err))
			}
			plans[run] = plan
			keep[run] = true
			next = append(next, run)
			continue
		}
		if s.router == nil {
			return abort(errors.New("the service's paths changed: restart instead"))
		}
		sizeToBudget(&svc.Config, s.budget, len(list))
		run, err := startService(svc, s.reg, s.log, s.sinks, s.budget)
		if err != nil {
			return abort(fmt.Errorf("service %s: %w", svc.Name, err))
		}
		started = append(started, run)
		next = append(next, run)
	}
	for i, run := range next {
		if !keep[run] {
			continue
		}
		svc := list[i]
		if svc.Config.Discovery.DNSName == "" {
			run.stdio.begin(plans[run], grace)
			change, err := run.fleet.Update(upstreamSpecs(&svc.Config))
			run.stdio.finish(plans[run], grace)
			if err != nil { // checked above: only a bug of ours
				run.log.Error("reload: upstreams not applied", "error", err.Error())
			} else if s.router == nil || len(change.Added)+len(change.Removed) > 0 {
				run.log.Info("reloaded upstreams", "added", change.Added, "removed", change.Removed)
			}
			if p, err := authzPolicy(&svc.Config); err == nil { // compiled already: only a bug of ours fails
				run.gw.SetAuthz(p)
			}
			if err := run.gw.SetMaxInflight(maxInflight(&svc.Config)); err != nil {
				run.log.Warn("reload: the upstreams' max_inflight is not applied", "error", err.Error())
			}
		}
	}
	s.mu.Lock()
	for i, run := range next {
		run.svc.Hosts, run.svc.Default = list[i].Hosts, list[i].Default
	}
	s.runs = next
	routes := s.routes()
	s.mu.Unlock()
	if s.router != nil {
		s.router.Set(routes)
	}
	for _, run := range old {
		if !slices.Contains(next, run) {
			run.retire(grace)
		}
	}
	for _, run := range started {
		run.log.Info("service added")
	}
	return nil
}

// checkReload checks what a reload to cfg changes of a service that stays,
// before anything is applied: its discovery is not turned on or off, its
// upstreams make a fleet, and its stdio children can be planned (their
// env files read); it returns that plan.
func (run *serviceRun) checkReload(cfg *config.Config) (stdioPlan, error) {
	if cfg.Discovery.DNSName != "" || run.svc.Config.Discovery.DNSName != "" {
		if cfg.Discovery.DNSName != run.svc.Config.Discovery.DNSName {
			return stdioPlan{}, errors.New("discovery cannot be turned on or off by a reload; restart instead")
		}
	} else if _, err := upstream.New(upstreamSpecs(cfg)); err != nil {
		return stdioPlan{}, err
	}
	return run.stdio.prepare(cfg)
}

// sameShape says whether a service's gateway can stay through a reload:
// its paths are the same.
func sameShape(a, b config.Config) bool {
	return a.Path == b.Path && a.SSEPath == b.SSEPath && a.SSEMessagesPath == b.SSEMessagesPath &&
		slices.Equal(a.PassthroughPaths, b.PassthroughPaths)
}

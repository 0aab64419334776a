package chaos

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/config"
	"github.com/mcpfleet/mcpfleet/internal/proc"
)

// gatewayConfig is a gateway process's configuration file (docs/CONFIG.md):
// every process shares the secret file (sealed session IDs open in any of
// them) and the Redis store (idempotency records, tasks).
var gatewayConfig = template.Must(template.New("gateway").Parse(`# mcpfleet chaos: gateway {{.Name}}
listen: {{.Addr}}
admin: {{.Admin}}
upstreams:
{{- range .Upstreams}}
  - {name: {{.Name}}, url: "{{.URL}}"}
{{- end}}
secret_file: {{.Secret}}
idempotency: redis
task_store: redis
redis_url: {{.Redis}}
drain_delay: {{.DrainDelay}}
grace: {{.Grace}}
health_check: {interval: {{.Interval}}, timeout: {{.Interval}}, fall: 2, rise: 2}
`))

// gatewayStartTimeout bounds a gateway process's start, until /readyz
// answers 200.
const gatewayStartTimeout = 15 * time.Second

// gatewayProc is one gateway process's place in the fleet: its name (also
// its server name in HAProxy), addresses and configuration stay across
// restarts.
type gatewayProc struct {
	name   string
	addr   string // MCP listener, host:port
	admin  string // admin listener: /metrics
	config string // its configuration file

	mu    sync.Mutex      // guards p and lives
	p     *proc.Process   // the current process; nil before the first start
	lives []*proc.Process // every process started, for their output
}

// current returns the process running now.
func (gw *gatewayProc) current() *proc.Process {
	gw.mu.Lock()
	defer gw.mu.Unlock()
	return gw.p
}

// start runs a new process and returns once its /readyz answers 200.
func (gw *gatewayProc) start(ctx context.Context, bin string) error {
	p, err := proc.Start(gw.name, bin, "serve", "--config", gw.config)
	if err != nil {
		return err
	}
	gw.mu.Lock()
	gw.p, gw.lives = p, append(gw.lives, p)
	gw.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, gatewayStartTimeout)
	defer cancel()
	for {
		if ready(ctx, "http://"+gw.addr+"/readyz") {
			return nil
		}
		select {
		case <-p.Exited():
			return fmt.Errorf("%s exited at start (%v):\n%s", gw.name, p.Err(), proc.LastLines(p.Output(), 20))
		case <-ctx.Done():
			p.Kill()
			return fmt.Errorf("waiting for %s's /readyz: %w\n%s", gw.name, ctx.Err(), proc.LastLines(p.Output(), 20))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// metricsURL is the gateway's /metrics.
func (gw *gatewayProc) metricsURL() string { return "http://" + gw.admin + "/metrics" }

// ready reports whether u answers 200 now.
func ready(ctx context.Context, u string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// gatewayFleet is the front of a RollGateways run: gateway processes
// sharing a secret file and a redis-server, and HAProxy in front of them.
type gatewayFleet struct {
	o     *Options
	redis *proc.Redis
	gws   []*gatewayProc
	lb    *haproxy

	mu    sync.Mutex // guards lives
	lives []samples  // each stopped process's last metrics

	closeOnce sync.Once
}

// startGateways starts the redis-server, o.Gateways gateway processes in
// front of replicas and HAProxy in front of them, in dir, and returns once
// HAProxy sees every gateway up. On error everything started is stopped.
func startGateways(ctx context.Context, o *Options, dir string, replicas []*replica) (*gatewayFleet, error) {
	g := &gatewayFleet{o: o}
	if err := g.start(ctx, dir, replicas); err != nil {
		g.close()
		return nil, err
	}
	return g, nil
}

func (g *gatewayFleet) start(ctx context.Context, dir string, replicas []*replica) error {
	secret, err := writeSecret(dir)
	if err != nil {
		return err
	}
	rdir := filepath.Join(dir, "redis")
	if err := os.Mkdir(rdir, 0o700); err != nil {
		return fmt.Errorf("making redis-server's directory: %w", err)
	}
	if g.redis, err = proc.StartRedis(ctx, g.o.RedisServer, rdir); err != nil {
		return err
	}
	for i := range g.o.Gateways {
		gw := &gatewayProc{name: fmt.Sprintf("gateway-%d", i+1), config: filepath.Join(dir, fmt.Sprintf("gateway-%d.yaml", i+1))}
		g.gws = append(g.gws, gw)
		// A port another process takes between FreeAddr and the gateway's
		// bind fails the start: new ports, up to three times.
		for attempt := 0; ; attempt++ {
			if err = g.configure(gw, secret, replicas); err == nil {
				err = gw.start(ctx, g.o.Binary)
			}
			if err == nil || attempt == 2 || ctx.Err() != nil {
				break
			}
		}
		if err != nil {
			return err
		}
	}
	if g.lb, err = startHAProxy(ctx, g.o.HAProxy, dir, g.gws); err != nil {
		return err
	}
	return nil
}

// writeSecret writes a fresh secret file, mode 0600, in dir.
func writeSecret(dir string) (string, error) {
	s, err := config.RandomSecret(rand.Reader)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "secret.yaml")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("writing the secret file: %w", err)
	}
	if err := config.WriteSecretFile(f, s); err != nil {
		f.Close()
		return "", fmt.Errorf("writing the secret file: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("writing the secret file: %w", err)
	}
	return path, nil
}

// configure gives gw free loopback ports and writes its configuration.
func (g *gatewayFleet) configure(gw *gatewayProc, secret string, replicas []*replica) error {
	var err error
	if gw.addr, err = proc.FreeAddr(); err != nil {
		return err
	}
	if gw.admin, err = proc.FreeAddr(); err != nil {
		return err
	}
	type upstream struct{ Name, URL string }
	v := struct {
		Name, Addr, Admin, Secret, Redis string
		DrainDelay, Grace, Interval      time.Duration
		Upstreams                        []upstream
	}{gw.name, gw.addr, gw.admin, secret, g.redis.URL(), g.o.DrainDelay, g.o.Grace, g.o.HealthInterval, nil}
	for _, r := range replicas {
		v.Upstreams = append(v.Upstreams, upstream{r.name, r.url()})
	}
	var b strings.Builder
	if err := gatewayConfig.Execute(&b, v); err != nil {
		return fmt.Errorf("writing %s's configuration: %w", gw.name, err)
	}
	if err := os.WriteFile(gw.config, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("writing %s's configuration: %w", gw.name, err)
	}
	return nil
}

// endpoint is HAProxy's MCP URL: the clients' way in.
func (g *gatewayFleet) endpoint() string { return "http://" + g.lb.addr + "/mcp" }

// roll restarts every gateway process in turn, the next once HAProxy sees
// the last one up again.
func (g *gatewayFleet) roll(ctx context.Context, t0 time.Time) ([]RestartEvent, error) {
	var events []RestartEvent
	for _, gw := range g.gws {
		ev, err := g.restart(ctx, gw, t0)
		events = append(events, ev)
		if err != nil {
			return events, err
		}
	}
	return events, nil
}

// restart stops gw with SIGTERM, waits for it to exit (it drains: /readyz
// 503 for the drain delay while it still serves, then grace for calls in
// flight), starts it again on the same ports and waits until HAProxy sends
// it work again.
func (g *gatewayFleet) restart(ctx context.Context, gw *gatewayProc, t0 time.Time) (RestartEvent, error) {
	ev := RestartEvent{Gateway: gw.name, Cut: -1}
	before, err := scrape(ctx, gw.metricsURL())
	if err != nil {
		return ev, err
	}
	ev.Served = int(before.sum("mcpfleet_requests_total", map[string]string{"method": "tools/call"}))
	ev.InFlight = int(before.sum("mcpfleet_replica_in_flight", nil))
	p := gw.current()
	g.o.Logger.Info("stopping gateway", "gateway", gw.name, "calls_served", ev.Served, "in_flight", ev.InFlight)
	ev.Stop = time.Since(t0)
	if err := p.Terminate(); err != nil {
		return ev, err
	}
	last, err := g.watchStop(ctx, gw, p, before, &ev, t0)
	if err != nil {
		return ev, err
	}
	ev.Drained = int(last.sum("mcpfleet_requests_total", map[string]string{"method": "tools/call"})) - ev.Served
	g.keep(last)
	if strings.Contains(p.Output(), "grace over") {
		ev.Cut = ev.Stop + g.o.DrainDelay + g.o.Grace
		g.o.Logger.Info("gateway cut calls in flight", "gateway", gw.name)
	}
	if err := p.Err(); err != nil {
		g.o.Logger.Warn("gateway exited with an error", "gateway", gw.name, "error", err)
	}
	if err := sleep(ctx, g.o.Downtime); err != nil {
		return ev, err
	}
	if err := gw.start(ctx, g.o.Binary); err != nil {
		return ev, err
	}
	if err := g.lb.wait(ctx, gw.name, statusUp); err != nil {
		return ev, err
	}
	ev.Up = time.Since(t0)
	g.o.Logger.Info("gateway back up", "gateway", gw.name, "out_after", (ev.Out - ev.Stop).Round(time.Millisecond),
		"down_for", (ev.Up - ev.Stop).Round(time.Millisecond), "answered_after_sigterm", ev.Drained)
	return ev, nil
}

// watchStop follows a stopping gateway until it has exited and HAProxy
// sees it down: it records when each happened in ev, and returns the
// gateway's last metrics before it exited (before, if no later scrape
// answered).
func (g *gatewayFleet) watchStop(ctx context.Context, gw *gatewayProc, p *proc.Process, before samples, ev *RestartEvent, t0 time.Time) (samples, error) {
	last := before
	exited := p.Exited()
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for ev.Down == 0 || ev.Out == 0 {
		if ev.Down == 0 {
			if ss, err := scrape(ctx, gw.metricsURL()); err == nil {
				last = ss
			}
		}
		if ev.Out == 0 {
			if st, err := g.lb.status(ctx, gw.name); err == nil && statusDown(st) {
				ev.Out = time.Since(t0)
			}
		}
		select {
		case <-exited:
			ev.Down, exited = time.Since(t0), nil // from here on, the ticker
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
		if ev.Down != 0 && ev.Out == 0 && time.Since(t0)-ev.Down > 10*time.Second {
			return nil, fmt.Errorf("HAProxy still sees %s up 10s after it exited", gw.name)
		}
	}
	if ev.Out > ev.Down {
		g.o.Logger.Warn("HAProxy saw the gateway down only after it had exited: the drain delay is shorter than HAProxy's detection",
			"gateway", gw.name, "drain_delay", g.o.DrainDelay)
	}
	return last, nil
}

// keep adds a stopped process's last metrics to the run's.
func (g *gatewayFleet) keep(ss samples) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.lives = append(g.lives, ss)
}

// finish reads the last metrics of the gateways still running and
// HAProxy's counters into r, then stops every process.
func (g *gatewayFleet) finish(ctx context.Context, r *Report) error {
	var errs []error
	for _, gw := range g.gws {
		ss, err := scrape(ctx, gw.metricsURL())
		if err != nil {
			errs = append(errs, err)
		}
		g.keep(ss)
	}
	b, err := g.lb.figures(ctx)
	errs = append(errs, err)
	g.close()
	r.Balancer = b
	for _, ss := range g.lives {
		r.addCounters(ss)
	}
	r.Logs = g.logs()
	return errors.Join(errs...)
}

// logs returns the end of every process's output, by name.
func (g *gatewayFleet) logs() map[string]string {
	out := map[string]string{}
	for _, gw := range g.gws {
		gw.mu.Lock()
		for i, p := range gw.lives {
			out[fmt.Sprintf("%s (start %d)", gw.name, i+1)] = p.Output()
		}
		gw.mu.Unlock()
	}
	if g.lb != nil {
		out["haproxy"] = g.lb.p.Output()
	}
	if g.redis != nil {
		out["redis-server"] = g.redis.Output()
	}
	return out
}

// close stops every process at once: the traffic is over. It is
// idempotent.
func (g *gatewayFleet) close() {
	g.closeOnce.Do(func() {
		var wg sync.WaitGroup
		for _, gw := range g.gws {
			if p := gw.current(); p != nil {
				wg.Go(p.Kill) // no drain: nothing is left to finish
			}
		}
		wg.Wait()
		if g.lb != nil {
			g.lb.p.Stop(2 * time.Second)
		}
		if g.redis != nil {
			g.redis.Stop(2 * time.Second)
		}
	})
}

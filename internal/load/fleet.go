package load

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/bottleneck"
	"github.com/mcpfleet/mcpfleet/internal/config"
	"github.com/mcpfleet/mcpfleet/internal/proc"
	"github.com/mcpfleet/mcpfleet/internal/sim"
)

// startTimeout bounds a process's start, until its health endpoint answers.
const startTimeout = 15 * time.Second

// replica is one mcpfleet testserver process; its name, address and flags
// stay across the restarts of a rolling deploy.
type replica struct {
	name string
	addr string
	args []string
	env  []string

	mu     sync.Mutex
	p      *proc.Process
	killed int // calls killed by this replica's stops, every life
}

// start runs a new life of the replica and returns once /health answers.
func (r *replica) start(ctx context.Context, bin string) error {
	p, err := proc.StartEnv(r.name, bin, r.env, r.args...)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.p = p
	r.mu.Unlock()
	return waitHealthy(ctx, p, "http://"+r.addr+"/health")
}

// process is the life running now.
func (r *replica) process() *proc.Process {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.p
}

// stoppedLine is what a testserver prints when it stops.
var stoppedLine = regexp.MustCompile(`(?m)^mcpfleet testserver \S+: stopped, (\d+) calls killed$`)

// stop sends SIGTERM and waits until the process has exited (or kills it
// after limit), adding the calls it killed to r.killed.
func (r *replica) stop(limit time.Duration) int {
	p := r.process()
	p.Stop(limit)
	k := 0
	if m := stoppedLine.FindAllStringSubmatch(p.Output(), -1); len(m) > 0 {
		k, _ = strconv.Atoi(m[len(m)-1][1])
	}
	r.mu.Lock()
	r.killed += k
	r.mu.Unlock()
	return k
}

// url is the replica's MCP endpoint.
func (r *replica) url() string { return "http://" + r.addr + "/mcp" }

// health is what a testserver's /health says of its calls.
type health struct {
	Running int `json:"running"`
	Queued  int `json:"queued"`
}

// waitHealthy polls u until it answers 200, the process exits or
// startTimeout passes.
func waitHealthy(ctx context.Context, p *proc.Process, u string) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	for {
		if ok200(ctx, u) {
			return nil
		}
		select {
		case <-p.Exited():
			return fmt.Errorf("%s exited at start (%v):\n%s", p.Name, p.Err(), proc.LastLines(p.Output(), 20))
		case <-ctx.Done():
			p.Kill()
			return fmt.Errorf("waiting for %s at %s: %w\n%s", p.Name, u, ctx.Err(), proc.LastLines(p.Output(), 20))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// ok200 reports whether u answers 200 now.
func ok200(ctx context.Context, u string) bool {
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

// fleet is every process a --fleet run starts: the replicas, the front
// (gateway processes, HAProxy) and any store.
type fleet struct {
	o        *Options
	dir      string
	ledger   string
	replicas []*replica
	gateways []*gatewayProc
	lb       *proc.Process
	redis    *proc.Redis
	front    string // the MCP URL the clients (or the idle cutter) reach
	// onStart, when set, is told of every replica life a deploy starts.
	onStart func(bottleneck.Target)
}

// era is the testserver's --era for the scenario's protocol.
func era(s *sim.Scenario) string {
	if s.Protocol == sim.Rev2026 {
		return "2026"
	}
	return "2025"
}

// startFleet starts the replicas and the front the scenario's routing
// names. On error everything started is stopped.
func startFleet(ctx context.Context, o *Options, dir string) (*fleet, error) {
	f := &fleet{o: o, dir: dir, ledger: filepath.Join(dir, "ledger")}
	if err := f.start(ctx); err != nil {
		f.close()
		return nil, err
	}
	return f, nil
}

func (f *fleet) start(ctx context.Context) error {
	s := &f.o.Scenario
	for i := range s.Replicas {
		addr, err := proc.FreeAddr()
		if err != nil {
			return err
		}
		name := fmt.Sprintf("replica-%d", i+1)
		r := &replica{name: name, addr: addr, env: []string{fmt.Sprintf("GOMAXPROCS=%d", f.o.ReplicaCores)}}
		r.args = []string{"testserver", "--listen", addr, "--name", name, "--era", era(s),
			"--ledger", f.ledger, "--slots", strconv.Itoa(s.Slots),
			"--keepalive", f.o.real(s.KeepAlive).String(),
			// A draining replica says so for the drain delay (one health
			// interval), then stops taking work: the drain window is its grace.
			"--drain-delay", f.o.DrainDelay.String(),
			"--grace", f.o.real(s.DrainWindow).String()}
		if s.Protocol != sim.Rev2026 {
			// The model's replicas keep their streams' events, so that a
			// client cut off resumes with Last-Event-ID (the SDK keeps
			// none by default).
			r.args = append(r.args, "--event-store")
		}
		if s.Protocol == sim.Shared2025 {
			// Sessions every replica knows: the SDK's stateless mode with
			// session IDs still issued and accepted from anyone.
			r.args = append(r.args, "--stateless")
			r.env = append(r.env, "MCPGODEBUG=allowsessionsinstateless=1")
		}
		f.replicas = append(f.replicas, r)
		if err := r.start(ctx, f.o.Binary); err != nil {
			return err
		}
	}
	needRedis := s.Routing == sim.Fleet && (s.Gateways > 1 || s.LimitStore == sim.SharedLimits)
	if needRedis {
		if f.o.RedisServer == "" {
			var err error
			if f.o.RedisServer, err = proc.Lookup("redis-server", "redis-server"); err != nil {
				return err
			}
		}
		rdir := filepath.Join(f.dir, "redis")
		if err := os.Mkdir(rdir, 0o700); err != nil {
			return fmt.Errorf("making redis-server's directory: %w", err)
		}
		var err error
		if f.redis, err = proc.StartRedis(ctx, f.o.RedisServer, rdir); err != nil {
			return err
		}
	}
	switch {
	case s.Routing == sim.Fleet:
		return f.startGateways(ctx)
	default:
		addrs := make([]string, len(f.replicas))
		for i, r := range f.replicas {
			addrs[i] = r.addr
		}
		return f.startHAProxy(ctx, addrs, "/health", s.Routing == sim.Affinity)
	}
}

// gatewayConfig is a gateway process's configuration (docs/CONFIG.md).
var gatewayConfig = template.Must(template.New("gateway").Parse(`# mcpfleet load: gateway {{.Name}}
listen: {{.Addr}}
admin: {{.Admin}}
upstreams:
{{- range .Upstreams}}
  - {name: {{.Name}}, url: "{{.URL}}"}
{{- end}}
secret_file: {{.Secret}}
balance: hash
hash_epsilon: {{.Epsilon}}
hash_min_load: {{.MinLoad}}
sessions: {{.Sessions}}
keepalive: {{.KeepAlive}}
health_check: {interval: {{.Interval}}, timeout: {{.Interval}}, fall: 2, rise: 2}
drain_delay: {{.DrainDelay}}
grace: {{.Grace}}
{{- if .Redis}}
redis_url: {{.Redis}}
idempotency: redis
resume: {store: redis}
{{- end}}
limits:
  store: {{.LimitStore}}
  rate: {{.Rate}}
  burst: {{.Burst}}
  concurrency: {{.Concurrency}}
`))

// startGateways starts the scenario's gateway processes and, with more
// than one, HAProxy in front of them.
func (f *fleet) startGateways(ctx context.Context) error {
	s := &f.o.Scenario
	secret, err := writeSecret(f.dir)
	if err != nil {
		return err
	}
	type upstream struct{ Name, URL string }
	var ups []upstream
	for _, r := range f.replicas {
		ups = append(ups, upstream{r.name, r.url()})
	}
	limitStore, redisURL := "memory", ""
	if f.redis != nil {
		redisURL = f.redis.URL()
		if s.LimitStore == sim.SharedLimits {
			limitStore = "redis"
		}
	}
	sessions := "pinned"
	if s.Protocol == sim.Shared2025 {
		sessions = "shared"
	}
	// Rolling the gateways, each drains as a replica does; otherwise they
	// never stop before the end, and then their calls are over.
	gwDrain, gwGrace := time.Duration(0), time.Minute
	if f.o.Roll == RollGateways {
		gwDrain, gwGrace = f.o.DrainDelay, max(f.o.real(s.DrainWindow), time.Second)
	}
	var addrs []string
	for i := range s.Gateways {
		name := fmt.Sprintf("gateway-%d", i+1)
		var p *proc.Process
		var addr, admin, file string
		for attempt := 0; ; attempt++ { // a port taken before the bind: new ports
			if addr, err = proc.FreeAddr(); err != nil {
				return err
			}
			if admin, err = proc.FreeAddr(); err != nil {
				return err
			}
			file = filepath.Join(f.dir, name+".yaml")
			var b strings.Builder
			err = gatewayConfig.Execute(&b, map[string]any{
				"Name": name, "Addr": addr, "Admin": admin, "Upstreams": ups, "Secret": secret,
				"Epsilon": s.HashEpsilon, "MinLoad": s.HashMinLoad,
				"KeepAlive": f.o.real(s.KeepAlive).String(), "Interval": f.o.healthInterval().String(),
				"Redis": redisURL, "LimitStore": limitStore, "Sessions": sessions,
				"DrainDelay": gwDrain.String(), "Grace": gwGrace.String(),
				"Rate": s.LimitRate * f.o.Speed, "Burst": s.LimitBurst, "Concurrency": s.LimitConcurrency,
			})
			if err == nil {
				err = os.WriteFile(file, []byte(b.String()), 0o600)
			}
			if err != nil {
				return fmt.Errorf("writing %s's configuration: %w", name, err)
			}
			if p, err = proc.Start(name, f.o.Binary, "serve", "--config", file); err != nil {
				return err
			}
			if err = waitHealthy(ctx, p, "http://"+addr+"/readyz"); err == nil || attempt == 2 || ctx.Err() != nil {
				break
			}
		}
		if err != nil {
			return err
		}
		f.gateways = append(f.gateways, &gatewayProc{name: name, addr: addr, admin: admin, config: file, p: p})
		addrs = append(addrs, addr)
	}
	if len(addrs) == 1 {
		f.front = "http://" + addrs[0] + "/mcp"
		return nil
	}
	return f.startHAProxy(ctx, addrs, "/readyz", false)
}

// haproxyConfig is HAProxy in front of the replicas (a balancer that knows
// nothing of MCP: round-robin, or consistent hashing of the caller's
// Authorization header for affinity) or of the gateway processes.
var haproxyConfig = template.Must(template.New("haproxy").Parse(`# mcpfleet load: HAProxy
global
  maxconn 8192

defaults
  mode http
  timeout connect 3s
  timeout check {{.Check}}
  timeout http-request 10s
  # Only the idle cutter in front bounds a silent stream.
  timeout client 10m
  timeout server 10m
  timeout http-keep-alive 60s
  option http-no-delay
  # A connection that failed to open carried nothing: try again, each time
  # on another server. retry-on stays at its default (conn-failure): a
  # request that reached a server is never sent twice.
  retries 3
  option redispatch 1
{{- if .ServerClose}}
  # One connection to a gateway per request, closed after its answer: no
  # idle connection that a stopping gateway closes just as a request goes
  # out on it.
  option http-server-close
{{- end}}
  # A client that goes away (the idle cutter, a client cancelling) ends the
  # request upstream too, so the replica does not hold a stream no one reads.
  option abortonclose

frontend mcp
  bind {{.Listen}}
  default_backend fleet

backend fleet
{{- if .Affinity}}
  balance hdr(Authorization)
  hash-type consistent
{{- else}}
  balance roundrobin
{{- end}}
  option httpchk
  http-check send meth GET uri {{.Path}}
  http-check expect status 200
{{- range $i, $a := .Servers}}
  server s{{$i}} {{$a}} check inter {{$.Inter}} fall 2 rise 2
{{- end}}
`))

// startHAProxy runs HAProxy over servers, health-checking path on each.
func (f *fleet) startHAProxy(ctx context.Context, servers []string, path string, affinity bool) error {
	if f.o.HAProxy == "" {
		var err error
		if f.o.HAProxy, err = proc.Lookup("haproxy", "haproxy"); err != nil {
			return err
		}
	}
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		var addr string
		if addr, err = proc.FreeAddr(); err != nil {
			return err
		}
		inter := f.o.healthInterval()
		var b strings.Builder
		if err = haproxyConfig.Execute(&b, map[string]any{
			"Listen": addr, "Affinity": affinity, "Path": path, "Servers": servers, "ServerClose": path == "/readyz",
			"Inter": fmt.Sprintf("%dms", inter.Milliseconds()), "Check": fmt.Sprintf("%dms", max(50, inter.Milliseconds()*4/5)),
		}); err != nil {
			return fmt.Errorf("writing haproxy's configuration: %w", err)
		}
		file := filepath.Join(f.dir, "haproxy.cfg")
		if err = os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
			return fmt.Errorf("writing haproxy's configuration: %w", err)
		}
		if f.lb, err = proc.Start("haproxy", f.o.HAProxy, "-db", "-f", file); err != nil {
			return err
		}
		if err = waitListening(ctx, f.lb, addr); err == nil {
			f.front = "http://" + addr + "/mcp"
			return nil
		}
		f.lb.Kill()
	}
	return err
}

// waitListening waits until addr accepts a connection and answers HTTP.
func waitListening(ctx context.Context, p *proc.Process, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			// Wait for the first health checks to pass: until then HAProxy
			// answers 503.
			if resp.StatusCode != http.StatusServiceUnavailable {
				return nil
			}
		}
		select {
		case <-p.Exited():
			return fmt.Errorf("haproxy exited at start (%v):\n%s", p.Err(), proc.LastLines(p.Output(), 20))
		case <-ctx.Done():
			return fmt.Errorf("waiting for haproxy on %s: %w", addr, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// writeSecret writes a fresh secret file, mode 0600, in dir.
func writeSecret(dir string) (string, error) {
	s, err := config.RandomSecret(rand.Reader)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "secret.yaml")
	file, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("writing the secret file: %w", err)
	}
	if err := config.WriteSecretFile(file, s); err != nil {
		file.Close()
		return "", fmt.Errorf("writing the secret file: %w", err)
	}
	if err := file.Close(); err != nil {
		return "", fmt.Errorf("writing the secret file: %w", err)
	}
	return path, nil
}

// gatewayProc is one gateway process's place in the fleet: its name,
// addresses and configuration stay across the restarts of a roll.
type gatewayProc struct {
	name, addr, admin, config string

	mu sync.Mutex
	p  *proc.Process
}

func (g *gatewayProc) process() *proc.Process {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.p
}

// deploy restarts every replica in turn (or every gateway, rolling the
// gateways): SIGTERM (it drains for the drain delay, then its calls get
// the drain window and what still runs is killed) or SIGKILL, down for the
// reboot time, back on the same address; the next goes once this one
// answers again. It returns the times (since t0) calls were killed.
func (f *fleet) deploy(ctx context.Context, t0 time.Time) ([]time.Duration, error) {
	if f.o.Roll == RollGateways {
		return nil, f.rollGateways(ctx)
	}
	s := &f.o.Scenario
	var kills []time.Duration
	hc := &http.Client{Timeout: time.Second}
	for _, r := range f.replicas {
		var k int
		if f.o.Kill == KillHard {
			k = r.kill(ctx, hc)
		} else {
			k = r.stop(f.o.DrainDelay + f.o.real(s.DrainWindow) + 10*time.Second)
		}
		at := time.Since(t0)
		for range k {
			kills = append(kills, at)
		}
		if err := sleep(ctx, f.o.real(s.RebootSeconds)); err != nil {
			return kills, err
		}
		if err := r.start(ctx, f.o.Binary); err != nil {
			return kills, fmt.Errorf("restarting %s: %w", r.name, err)
		}
		if f.onStart != nil {
			f.onStart(bottleneck.Target{Name: r.name, Role: bottleneck.RoleReplica, PID: r.process().PID(), Cores: float64(f.o.ReplicaCores)})
		}
		f.o.Logger.Info("replica restarted", "name", r.name, "killed", k)
	}
	return kills, nil
}

// kill stops the replica with SIGKILL: the calls it was running (its last
// /health) end without an answer.
func (r *replica) kill(ctx context.Context, hc *http.Client) int {
	var h health
	if req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.addr+"/health", nil); err == nil {
		if resp, err := hc.Do(req); err == nil {
			_ = json.NewDecoder(resp.Body).Decode(&h)
			resp.Body.Close()
		}
	}
	r.process().Kill()
	r.mu.Lock()
	r.killed += h.Running
	r.mu.Unlock()
	return h.Running
}

// rollGateways restarts every gateway process in turn: SIGTERM (its
// /readyz answers 503 for the drain delay, HAProxy takes it out, then it
// stops accepting and its calls get the grace), down for the reboot time,
// back on its addresses; the next goes once HAProxy can see this one up
// (two good checks).
func (f *fleet) rollGateways(ctx context.Context) error {
	s := &f.o.Scenario
	for _, g := range f.gateways {
		g.process().Stop(f.o.DrainDelay + f.o.real(s.DrainWindow) + 10*time.Second)
		if err := sleep(ctx, f.o.real(s.RebootSeconds)); err != nil {
			return err
		}
		p, err := proc.Start(g.name, f.o.Binary, "serve", "--config", g.config)
		if err != nil {
			return err
		}
		g.mu.Lock()
		g.p = p
		g.mu.Unlock()
		if err := waitHealthy(ctx, p, "http://"+g.addr+"/readyz"); err != nil {
			return fmt.Errorf("restarting %s: %w", g.name, err)
		}
		if f.onStart != nil {
			f.onStart(bottleneck.Target{Name: g.name, Role: bottleneck.RoleGateway, PID: p.PID(), Cores: float64(runtime.NumCPU())})
		}
		if err := sleep(ctx, 3*f.o.healthInterval()); err != nil {
			return err
		}
		f.o.Logger.Info("gateway restarted", "name", g.name)
	}
	return nil
}

// sampleHealth asks every replica's /health for its calls running and
// queued; a replica that does not answer (rebooting) counts as idle.
func (f *fleet) sampleHealth(ctx context.Context, hc *http.Client) []health {
	out := make([]health, len(f.replicas))
	var wg sync.WaitGroup
	for i, r := range f.replicas {
		wg.Go(func() {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.addr+"/health", nil)
			if err != nil {
				return
			}
			resp, err := hc.Do(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			_ = json.NewDecoder(bufio.NewReader(resp.Body)).Decode(&out[i]) // a draining answer has them too
		})
	}
	wg.Wait()
	return out
}

// killed is every call the replicas' stops killed, the final stop included.
func (f *fleet) killed() int {
	n := 0
	for _, r := range f.replicas {
		r.mu.Lock()
		n += r.killed
		r.mu.Unlock()
	}
	return n
}

// close stops every process of the fleet.
func (f *fleet) close() {
	if f.lb != nil {
		f.lb.Stop(5 * time.Second)
	}
	for _, g := range f.gateways {
		g.process().Stop(10 * time.Second)
	}
	for _, r := range f.replicas {
		if r.process() != nil {
			r.stop(10 * time.Second)
		}
	}
	if f.redis != nil {
		f.redis.Stop(5 * time.Second)
	}
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// gatewayRetries reads mcpfleet_retries_total by reason from every gateway
// process running now; one that does not answer adds nothing.
func (f *fleet) gatewayRetries() map[string]int {
	out := map[string]int{}
	hc := &http.Client{Timeout: 2 * time.Second}
	for _, g := range f.gateways {
		resp, err := hc.Get("http://" + g.admin + "/metrics")
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if reason, v, ok := retriesLine(sc.Text()); ok {
				out[reason] += v
			}
		}
		resp.Body.Close()
	}
	return out
}

// retriesLine reads one mcpfleet_retries_total sample of the text
// exposition format: its reason label and its value.
func retriesLine(line string) (string, int, bool) {
	rest, ok := strings.CutPrefix(line, "mcpfleet_retries_total{")
	if !ok {
		return "", 0, false
	}
	labels, value, ok := strings.Cut(rest, "} ")
	if !ok {
		return "", 0, false
	}
	_, reason, ok := strings.Cut(labels, `reason="`)
	if !ok {
		return "", 0, false
	}
	reason, _, ok = strings.Cut(reason, `"`)
	v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
	if !ok || err != nil {
		return "", 0, false
	}
	return reason, int(v), true
}

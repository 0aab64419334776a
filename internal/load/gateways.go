package load

import (
	"bufio"
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
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

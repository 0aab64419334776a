package load

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/bottleneck"
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

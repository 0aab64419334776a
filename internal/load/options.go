// Package load measures a real fleet the way the simulator measures a
// modelled one: it draws the simulator's own traffic for a scenario
// (sim.Traffic: the same calls, clients and durations), sends it with
// official Go SDK clients, time-compressed, to an endpoint or to a local
// fleet it starts (testserver replicas, the gateway or HAProxy in front,
// an idle-timeout proxy, a rolling deploy), and reports the simulator's
// figures, in the simulator's schema, beside where the CPU went.
package load

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/bottleneck"
	"github.com/mcpfleet/mcpfleet/internal/sim"
)

// Bounds on a run, so that a typo cannot start an hour of traffic.
const (
	// MaxCalls is the most calls one run sends (first sends; re-sends come on top).
	MaxCalls = 100_000
	// MaxWall is the longest a run's traffic may last in real time.
	MaxWall = 10 * time.Minute
	// MaxClients is the most client sessions.
	MaxClients = 500
	// MaxSpeed is the strongest time compression.
	MaxSpeed = 100
)

// Options configures a run.
type Options struct {
	// Scenario is the workload and, with Fleet, the fleet to start; its
	// times are model seconds.
	Scenario sim.Scenario
	// Speed is the time compression: model seconds per real second. Every
	// time of the scenario (arrivals, durations, progress, idle timeout,
	// keep-alive, drain, reboot, health checks) is divided by it and every
	// figure reported is multiplied back. 0 means 20.
	Speed float64
	// URL is an existing MCP endpoint to load; "" with Fleet.
	URL string
	// Fleet starts a local fleet of Scenario.Replicas testserver replicas
	// and the front Scenario.Routing names (mcpfleet: Scenario.Gateways
	// serve processes; round-robin and affinity: HAProxy).
	Fleet bool
	// Binary is the mcpfleet executable the fleet's processes run.
	Binary string
	// HAProxy and RedisServer are the executables of the balancer and the
	// store, when the fleet needs them.
	HAProxy, RedisServer string
	// ReplicaCores is each replica's GOMAXPROCS: 1 (the default) stands
	// for the single-threaded servers most MCP servers are.
	ReplicaCores int
	// Burn, when positive, makes every call the CPU-heavy tool burn of
	// that many milliseconds of CPU instead of sleep and mutate.
	Burn int
	// Kill is how the deploy stops a replica: KillTerm (SIGTERM: it drains,
	// then its calls get the drain window) or KillHard (SIGKILL: its calls
	// end at once). "" means KillTerm.
	Kill string
	// Roll is what the deploy restarts: RollReplicas, or RollGateways (each
	// gateway process in turn behind HAProxy, with routing mcpfleet and at
	// least two gateways). "" means RollReplicas.
	Roll string
	// DrainDelay is how long a stopping replica (or gateway) says it is
	// draining before it stops accepting work; 0 means one health-check
	// interval (five rolling the gateways, so that HAProxy sees it first).
	DrainDelay time.Duration
	// Watch adds processes the run did not start to the bottleneck finder.
	Watch []bottleneck.Target
	// Logger gets the run's events; nil discards them.
	Logger *slog.Logger
	// Progress, when set, gets a progress line every second.
	Progress io.Writer
}

// How the deploy stops what it restarts (Options.Kill).
const (
	KillTerm = "term"
	KillHard = "kill"
)

// What the deploy restarts (Options.Roll).
const (
	RollReplicas = "replicas"
	RollGateways = "gateways"
)

// Validate reports the first unusable option.
func (o *Options) Validate() error {
	s := o.Scenario
	if err := s.Validate(); err != nil {
		return err
	}
	switch {
	case o.Speed < 0 || o.Speed > MaxSpeed:
		return fmt.Errorf("speed: must be between 1 and %d, got %g", MaxSpeed, o.Speed)
	case o.Speed != 0 && o.Speed < 1:
		return fmt.Errorf("speed: must be between 1 and %d, got %g", MaxSpeed, o.Speed)
	case o.Fleet == (o.URL != ""):
		return errors.New("give one of an endpoint URL and a fleet to start")
	case o.Fleet && o.Binary == "":
		return errors.New("a fleet needs the mcpfleet binary")
	case s.Clients > MaxClients:
		return fmt.Errorf("clients: at most %d, got %d", MaxClients, s.Clients)
	case o.ReplicaCores < 0:
		return fmt.Errorf("replica cores: must not be negative, got %d", o.ReplicaCores)
	case o.Burn < 0 || o.Burn > 10_000:
		return fmt.Errorf("burn: between 0 and 10000 ms, got %d", o.Burn)
	case o.Kill != "" && o.Kill != KillTerm && o.Kill != KillHard:
		return fmt.Errorf("kill: want %s or %s, got %q", KillTerm, KillHard, o.Kill)
	case o.Roll != "" && o.Roll != RollReplicas && o.Roll != RollGateways:
		return fmt.Errorf("roll: want %s or %s, got %q", RollReplicas, RollGateways, o.Roll)
	case o.Roll == RollGateways && (s.Routing != sim.Fleet || s.Gateways < 2 || !o.Fleet):
		return errors.New("roll gateways: needs a fleet with routing mcpfleet and at least 2 gateways")
	case o.Roll == RollGateways && o.Kill == KillHard:
		return errors.New("roll gateways: gateways are stopped with SIGTERM only")
	case o.DrainDelay < 0:
		return fmt.Errorf("drain delay: must not be negative, got %s", o.DrainDelay)
	}
	if o.URL != "" {
		if err := loopbackURL(o.URL); err != nil {
			return err
		}
	}
	v := o.withDefaults()
	if calls := s.TotalRate() * s.TrafficSeconds; calls > MaxCalls {
		return fmt.Errorf("traffic: about %.0f calls, over the limit of %d", calls, MaxCalls)
	}
	if wall := v.real(s.TrafficSeconds); wall > MaxWall {
		return fmt.Errorf("traffic: %s of real time at speed %g, over the limit of %s", wall, v.Speed, MaxWall)
	}
	return nil
}

// loopbackURL accepts an http(s) URL whose host is a loopback address:
// load goes to this machine only.
func loopbackURL(u string) error {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return fmt.Errorf("url: want http://host:port/path, got %q", u)
	}
	h := p.Hostname()
	if h == "localhost" {
		return nil
	}
	ip := net.ParseIP(h)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("url: load goes to loopback only (127.0.0.0/8, ::1, localhost), got host %q", h)
	}
	return nil
}

// withDefaults fills the zero options.
func (o *Options) withDefaults() Options {
	v := *o
	if v.Speed == 0 {
		v.Speed = 20
	}
	if v.ReplicaCores == 0 {
		v.ReplicaCores = 1
	}
	if v.Kill == "" {
		v.Kill = KillTerm
	}
	if v.Roll == "" {
		v.Roll = RollReplicas
	}
	if v.DrainDelay == 0 {
		v.DrainDelay = v.healthInterval()
		if v.Roll == RollGateways {
			v.DrainDelay *= 5 // HAProxy takes two failed checks to see it
		}
	}
	if v.Logger == nil {
		v.Logger = slog.New(slog.DiscardHandler)
	}
	return v
}

// real is a model time in seconds as real time.
func (o *Options) real(seconds float64) time.Duration {
	return time.Duration(seconds / o.Speed * float64(time.Second))
}

// model is a real duration as model seconds.
func (o *Options) model(d time.Duration) float64 { return d.Seconds() * o.Speed }

// healthInterval is the gateway's and HAProxy's health-check interval:
// the model's 2 s, compressed, and never under 100 ms (the gateway's
// floor).
func (o *Options) healthInterval() time.Duration {
	return max(100*time.Millisecond, o.real(2))
}

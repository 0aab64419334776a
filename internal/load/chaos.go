package load

import (
	"fmt"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/sim"
)

// ChaosOptions are the settings of the chaos preset (docs/CHAOS.md): a
// rolling restart under a short, dense load. Its times are real ones.
type ChaosOptions struct {
	// Era is "2025" (2025-11-25 sessions in the replicas) or "2026".
	Era string
	// Roll, Kill and DrainDelay are Options'.
	Roll, Kill string
	DrainDelay time.Duration
	// Gateways is how many gateway processes run (HAProxy in front of
	// more than one); 0 means 1, or 3 rolling the gateways.
	Gateways int
	// Grace is the drain window: how long a stopping replica's (or
	// gateway's) calls get; 0 means 5 s.
	Grace time.Duration
	// Downtime is how long a stopped replica or gateway stays down; 0 means 1 s.
	Downtime time.Duration
	// IdempotencyKeys makes every attempt of a call carry its key.
	IdempotencyKeys bool
	// Duration is the traffic; 0 means 12 s.
	Duration time.Duration
	// Rate is calls per second; 0 means 15.
	Rate float64
	// Seed draws the traffic.
	Seed uint64
	// Replicas and Sessions; 0 means 3 and 12.
	Replicas, Sessions int
}

// Chaos is the chaos preset as Options: the lab's mix scaled down (Poisson
// arrivals, log-normal durations of median 0.3 s capped at 3 s, 40%
// mutating), a rolling restart from a quarter of the run, through mcpfleet
// serve processes.
func Chaos(c ChaosOptions) (Options, error) {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.Grace, 5*time.Second)
	def(&c.Downtime, time.Second)
	def(&c.Duration, 12*time.Second)
	if c.Rate == 0 {
		c.Rate = 15
	}
	if c.Replicas == 0 {
		c.Replicas = 3
	}
	if c.Sessions == 0 {
		c.Sessions = 12
	}
	if c.Gateways == 0 {
		c.Gateways = 1
		if c.Roll == RollGateways {
			c.Gateways = 3
		}
	}
	// The run is the model at speed 10: every time below is ten times the
	// real one, so that health checks (2 model seconds) run every 200 ms.
	const speed = 10
	s := sim.Default()
	switch c.Era {
	case "2025":
		s.Protocol = sim.Local2025
	case "2026", "":
		s.Protocol = sim.Rev2026
	default:
		return Options{}, fmt.Errorf("era: want 2025 or 2026, got %q", c.Era)
	}
	s.Seed, s.Clients, s.ArrivalRate = c.Seed, c.Sessions, c.Rate/speed
	s.TrafficSeconds = c.Duration.Seconds() * speed
	s.DurationMedian, s.DurationSigma, s.DurationCap = 0.3*speed, 1.0, 3*speed
	s.MutateShare, s.MutateFrom, s.MutateTo = 0.4, 0.2, 0.8
	s.Routing, s.Replicas, s.Gateways = sim.Fleet, c.Replicas, c.Gateways
	s.Slots = 100 // the calls' own durations decide, not a queue
	s.IdleTimeout = 0
	s.Deploy, s.DeployAt = true, s.TrafficSeconds/4
	s.DrainWindow, s.RebootSeconds = c.Grace.Seconds()*speed, c.Downtime.Seconds()*speed
	s.Idempotency = c.IdempotencyKeys
	s.RoundTrip = 0.1 * speed // clients back off 100 ms before a re-issue
	return Options{Scenario: s, Speed: speed, Fleet: true, Roll: c.Roll, Kill: c.Kill, DrainDelay: c.DrainDelay}, nil
}

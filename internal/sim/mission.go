package sim

import (
	"fmt"
)

// OtherSeeds is how many seeds after the mission's own a fix must also
// survive for the second star.
const OtherSeeds = 5

// Mission is one lab mission: a broken fleet, a goal and what counts as
// meeting it efficiently (docs/SIM.md, "Missions and calibration").
type Mission struct {
	// Number is the mission's number, from 1.
	Number int `json:"number"`
	// Name is the mission's title.
	Name string `json:"name"`
	// Goal says what the fleet must achieve.
	Goal string `json:"goal"`
	// Efficient says what the three-star answer must also respect.
	Efficient string `json:"efficient"`
	// Broken is the setup the mission loads; its Seed is the mission's seed.
	Broken Scenario `json:"broken"`
	// Reference is a three-star answer.
	Reference Scenario `json:"reference"`

	goal      func(*Result) bool
	efficient func(*Scenario) bool
}

// Stars is how a setting fares in a mission.
type Stars struct {
	// Stars is 0 to 3.
	Stars int `json:"stars"`
	// OnSeed reports the goal met on the mission's seed.
	OnSeed bool `json:"goal_on_mission_seed"`
	// Seeds are the other seeds tried, in order, and MetOn whether each met the goal.
	Seeds []uint64 `json:"other_seeds"`
	// MetOn reports, per other seed, whether the goal was met.
	MetOn []bool `json:"goal_on_other_seeds"`
	// Efficient reports the setting meets the efficiency criterion.
	Efficient bool `json:"efficient"`
}

// GoalMet reports whether a run meets the mission's goal.
func (m *Mission) GoalMet(r *Result) bool { return m.goal(r) }

// IsEfficient reports whether a setting meets the efficiency criterion.
func (m *Mission) IsEfficient(s *Scenario) bool { return m.efficient(s) }

// Evaluate runs s (its Seed replaced) on the mission's seed and the
// OtherSeeds after it, and awards stars: one for the goal on the mission's
// seed, two for the goal on every seed, three for that and efficiency.
func (m *Mission) Evaluate(s Scenario) (Stars, error) {
	var st Stars
	s.Seed = m.Broken.Seed
	r, err := Run(s)
	if err != nil {
		return st, err
	}
	st.OnSeed = m.goal(r)
	all := st.OnSeed
	for k := range uint64(OtherSeeds) {
		s.Seed = m.Broken.Seed + 1 + k
		st.Seeds = append(st.Seeds, s.Seed)
		met := m.goal(MustRun(s))
		st.MetOn = append(st.MetOn, met)
		all = all && met
	}
	st.Efficient = m.efficient(&s)
	switch {
	case !st.OnSeed:
	case !all:
		st.Stars = 1
	case !st.Efficient:
		st.Stars = 2
	default:
		st.Stars = 3
	}
	return st, nil
}

// MissionByNumber returns mission n.
func MissionByNumber(n int) (Mission, error) {
	ms := Missions()
	if n < 1 || n > len(ms) {
		return Mission{}, fmt.Errorf("mission %d: want 1 to %d", n, len(ms))
	}
	return ms[n-1], nil
}

// storm is the share of calls that saw a 404 above which the 404s are a storm.
const storm = 0.005

// Missions returns the nine missions, calibrated (docs/SIM.md).
func Missions() []Mission {
	return []Mission{silentStreams(), notFoundStorm(), rollingDeploy(), doubleCharge(), hotClient(), everything(), runawayAgent(), halfFinishedDeploy(), overloadedReplica()}
}

func silentStreams() Mission {
	b := Default()
	b.Seed, b.Protocol, b.Routing, b.Replicas = 1001, Local2025, Affinity, 3
	b.SlowTools, b.IdleTimeout, b.KeepAlive = true, 60, 0
	ref := b
	ref.KeepAlive = 30
	return Mission{
		Number: 1, Name: "Silent streams",
		Goal:      "no stream cut, no failed call",
		Efficient: "keep-alive interval at least half the idle timeout",
		Broken:    b, Reference: ref,
		goal: func(r *Result) bool { return r.IdleCuts == 0 && r.Failed == 0 },
		efficient: func(s *Scenario) bool {
			return s.IdleTimeout == 0 || (s.KeepAlive > 0 && s.KeepAlive >= s.IdleTimeout/2)
		},
	}
}

func notFoundStorm() Mission {
	b := Default()
	b.Seed, b.Protocol, b.Routing, b.Replicas = 2002, Local2025, RoundRobin, 3
	ref := b
	ref.Protocol = Shared2025
	return Mission{
		Number: 2, Name: "404 storm",
		Goal:      "under 0.5% of calls see a 404",
		Efficient: "with round-robin kept (fix the state model, not the routing)",
		Broken:    b, Reference: ref,
		goal:      func(r *Result) bool { return noStorm(r) },
		efficient: func(s *Scenario) bool { return s.Routing == RoundRobin },
	}
}

func rollingDeploy() Mission {
	b := Default()
	b.Seed, b.Protocol, b.Routing, b.Replicas = 3003, Rev2026, RoundRobin, 3
	b.Deploy, b.DrainWindow, b.ArrivalRate = true, 5, 6
	ref := b
	ref.DrainWindow = 35
	return Mission{
		Number: 3, Name: "Rolling deploy",
		Goal:      "no failed call and no killed execution",
		Efficient: "drain window at most 35 s",
		Broken:    b, Reference: ref,
		goal:      func(r *Result) bool { return r.Failed == 0 && r.Killed == 0 },
		efficient: func(s *Scenario) bool { return s.DrainWindow <= 35 },
	}
}

func doubleCharge() Mission {
	b := Default()
	b.Seed, b.Protocol, b.Routing, b.Replicas = 4004, Rev2026, RoundRobin, 3
	b.SlowTools, b.IdleTimeout, b.KeepAlive = true, 45, 0
	ref := b
	ref.KeepAlive = 20
	return Mission{
		Number: 4, Name: "Double charge",
		Goal:      "no duplicate mutation",
		Efficient: "without the idempotency toggle",
		Broken:    b, Reference: ref,
		goal:      func(r *Result) bool { return r.DuplicateMutations == 0 },
		efficient: func(s *Scenario) bool { return !s.Idempotency },
	}
}

func hotClient() Mission {
	b := Default()
	b.Seed, b.Protocol, b.Routing, b.Replicas = 5005, Local2025, Affinity, 4
	b.HotClient, b.HotFactor = true, 40
	ref := b
	ref.Protocol, ref.Routing, ref.Replicas = Shared2025, Fleet, 3
	return Mission{
		Number: 5, Name: "Hot client",
		Goal:      "p95 latency under 10 s and no 404 storm (under 0.5% of calls see a 404)",
		Efficient: "at most 3 replicas",
		Broken:    b, Reference: ref,
		goal:      func(r *Result) bool { return r.P95 < 10 && noStorm(r) },
		efficient: func(s *Scenario) bool { return s.Replicas <= 3 },
	}
}

func everything() Mission {
	b := Default()
	b.Seed, b.Protocol, b.Routing, b.Replicas = 6006, Local2025, RoundRobin, 3
	b.SlowTools, b.Deploy, b.HotClient = true, true, true
	ref := b
	ref.Protocol, ref.Routing, ref.Replicas, ref.Idempotency = Shared2025, Fleet, 4, true
	ref.DrainWindow, ref.HashEpsilon, ref.HashMinLoad = 250, 0.1, 0
	return Mission{
		Number: 6, Name: "Everything at once",
		Goal:      "no failed call, no duplicate mutation, p95 under 10 s",
		Efficient: "at most 4 replicas",
		Broken:    b, Reference: ref,
		goal: func(r *Result) bool {
			return r.Failed == 0 && r.DuplicateMutations == 0 && r.P95 < 10
		},
		efficient: func(s *Scenario) bool { return s.Replicas <= 4 },
	}
}

// The runaway agent's mission: its limit, and how far over it a fix may let
// the agent through.
const (
	runawayLimit    = 2.0  // calls per second per caller
	runawayOverrun  = 1.2  // the goal's bound, in multiples of runawayLimit
	runawayAtLeast  = 20.0 // the agent's extra calls per second the goal keeps
	runawayGateways = 2    // the fewest gateways for no single point of failure
)

func runawayAgent() Mission {
	b := Default()
	b.Seed, b.Protocol, b.Routing, b.Replicas = 7007, Rev2026, Fleet, 3
	b.Runaway, b.RunawayRate = true, runawayAtLeast
	b.Gateways, b.LimitStore = 3, LocalLimits
	b.LimitRate, b.LimitBurst, b.LimitConcurrency = runawayLimit, 5, 12
	ref := b
	ref.LimitStore, ref.Gateways = SharedLimits, runawayGateways
	return Mission{
		Number: 7, Name: "The runaway agent",
		Goal: fmt.Sprintf("with the runaway agent on (%g calls/s or more) and at least %d gateways: it gets at most %.1f calls/s through (%.1fx its %g/s limit), and no other client gets a 429",
			runawayAtLeast, runawayGateways, runawayOverrun*runawayLimit, runawayOverrun, runawayLimit),
		Efficient: fmt.Sprintf("limit store shared and at most %d gateways", runawayGateways),
		Broken:    b, Reference: ref,
		goal: func(r *Result) bool {
			s := &r.Scenario
			return s.Runaway && s.RunawayRate >= runawayAtLeast && s.Gateways >= runawayGateways &&
				r.RunawayAdmittedRate <= runawayOverrun*runawayLimit && r.RefusedOthers == 0
		},
		efficient: func(s *Scenario) bool { return s.LimitStore == SharedLimits && s.Gateways <= runawayGateways },
	}
}

// The half-finished deploy's mission: a rolling deploy adds a tool, and
// the goal keeps it on, called by at least halfDeployShare of calls, on at
// least halfDeployReplicas replicas (with two, the one being replaced
// leaves only upgraded replicas in rotation: nothing is ever mixed).
const (
	halfDeployShare    = 0.3
	halfDeployReplicas = 3
	halfDeployDrain    = 30.0 // seconds: the broken fleet's drain window
)

// halfFinishedDeploy: a rolling deploy adds a tool, and for as long as it
// runs the fleet is mixed. Clients that listed the tools of an upgraded
// replica call the new tool, and round-robin sends the call to an old
// replica as often as not, which answers "unknown tool". Tool-aware
// routing (mcpfleet: the gateway lists every replica's tools and sends a
// call only among those that declare its tool) sends each to a replica
// that has it.
func halfFinishedDeploy() Mission {
	b := Default()
	b.Seed, b.Protocol, b.Routing, b.Replicas = 8008, Rev2026, RoundRobin, halfDeployReplicas
	b.Deploy, b.DrainWindow = true, halfDeployDrain
	b.NewTool, b.NewToolShare = true, halfDeployShare
	ref := b
	ref.Routing = Fleet
	return Mission{
		Number: 8, Name: "The half-finished deploy",
		Goal: fmt.Sprintf("with a rolling deploy that adds a tool (new tool on, called by at least %.0f%% of calls) on at least %d replicas, finished within the traffic: no call fails with unknown tool, and no failed call",
			100*halfDeployShare, halfDeployReplicas),
		Efficient: fmt.Sprintf("at most %d replicas, drain window at most %g s", halfDeployReplicas, halfDeployDrain),
		Broken:    b, Reference: ref,
		goal: func(r *Result) bool {
			s := &r.Scenario
			finished := s.DeployAt+float64(s.Replicas)*(s.DrainWindow+s.RebootSeconds) <= s.TrafficSeconds
			return s.Deploy && s.NewTool && s.NewToolShare >= halfDeployShare && s.Replicas >= halfDeployReplicas && finished &&
				r.UnknownTool == 0 && r.Failed == 0
		},
		efficient: func(s *Scenario) bool { return s.Replicas <= halfDeployReplicas && s.DrainWindow <= halfDeployDrain },
	}
}

// The overloaded replica's mission: three gateways in front of three
// replicas of four slots.
const (
	overloadGateways = 3
	overloadP95      = 8.0 // seconds
)

// overloadedReplica: three gateways route a hot client's calls with
// bounded-load hashing, and each gateway sees only its own share of a
// replica's load (and keeps its own hash_min_load floor), so together they
// pile calls on one replica far past its slots. A max_inflight held by
// each gateway alone lets three times the cap through; held fleet-wide
// (the shared store), no replica is sent more than it runs, and a queue at
// the gateways keeps every call answered.
func overloadedReplica() Mission {
	b := Default()
	b.Seed, b.Protocol, b.Routing, b.Replicas, b.Slots = 9009, Rev2026, Fleet, 3, 4
	b.HotClient, b.Gateways = true, overloadGateways
	ref := b
	ref.MaxInflight, ref.LimitStore, ref.QueueTimeout = 4, SharedLimits, 30
	return Mission{
		Number: 9, Name: "The overloaded replica",
		Goal: fmt.Sprintf("with at least %d gateways: no call waits in a replica's queue (no replica is sent more calls than its slots), no failed call, p95 under %g s",
			overloadGateways, overloadP95),
		Efficient: "at most 3 replicas",
		Broken:    b, Reference: ref,
		goal: func(r *Result) bool {
			for _, rep := range r.Replicas {
				if rep.LongestQueue > 0 {
					return false
				}
			}
			return r.Scenario.Gateways >= overloadGateways && r.Failed == 0 && r.P95 < overloadP95
		},
		efficient: func(s *Scenario) bool { return s.Replicas <= 3 },
	}
}

// noStorm reports fewer than storm of the calls saw a 404.
func noStorm(r *Result) bool {
	return r.Issued > 0 && float64(r.CallsWith404) < storm*float64(r.Issued)
}

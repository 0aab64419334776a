// Package health is a replica's health state machine: HAProxy's "fall N
// rise M" with a draining state. It is pure (no I/O, no clock, no
// net/http): the fleet (package upstream) feeds it active checks and the
// forwarding path's reports, and the simulator feeds it what its replicas
// would answer, so both follow the same rules.
package health

import (
	"fmt"
	"time"
)

// Defaults of the policy, as HAProxy's "check inter 2s fall 2 rise 2"
// configures it: a check every two seconds, two consecutive failures take a replica down,
// two consecutive ok checks bring it back, so a dead replica is out within
// about four seconds. The gateway's checker and the simulator both use them.
const (
	// DefaultInterval is the time between two rounds of active checks.
	DefaultInterval = 2 * time.Second
	// DefaultFall is how many consecutive failures take a replica down.
	DefaultFall = 2
	// DefaultRise is how many consecutive ok checks bring it back up.
	DefaultRise = 2
)

// State is a replica's health as the fleet sees it. The zero State is
// StateUp: a replica serves from the moment it joins, before any check has
// run, so a fleet works without health checks and is not empty while its
// first round is in flight.
type State int32

const (
	// StateUp means the replica takes new work.
	StateUp State = iota
	// StateDown means checks (or connect failures) failed fall times in a
	// row; the replica takes no new work until rise checks pass in a row.
	StateDown
	// StateDraining means the replica answered 503 {"status":"draining"}:
	// it is shutting down, still serves the sessions it holds, and takes no
	// new work.
	StateDraining
)

// String returns "up", "down" or "draining".
func (s State) String() string {
	switch s {
	case StateUp:
		return "up"
	case StateDown:
		return "down"
	case StateDraining:
		return "draining"
	}
	return fmt.Sprintf("State(%d)", int32(s))
}

// Result is the outcome of one health observation: an active check, or a
// report from the forwarding path.
type Result int

const (
	// ResultOK is a healthy answer (200 to a check).
	ResultOK Result = iota
	// ResultFail is a failed check: a wrong status, a timeout, a refused
	// connection, or a connect failure reported by the gateway.
	ResultFail
	// ResultDraining is a 503 answer whose JSON body says
	// "status":"draining".
	ResultDraining
)

// String returns "ok", "fail" or "draining".
func (r Result) String() string {
	switch r {
	case ResultOK:
		return "ok"
	case ResultFail:
		return "fail"
	case ResultDraining:
		return "draining"
	}
	return fmt.Sprintf("Result(%d)", int(r))
}

// Status is a replica's state together with the streak that may move it
// next. Counters count consecutive results toward the next transition and
// restart from zero on every transition. The zero Status is up.
type Status struct {
	State State
	// Successes counts consecutive ok results while down or draining.
	Successes int
	// Failures counts consecutive failed results while up or draining.
	Failures int
}

// Next returns the status after observing r. It is the whole health policy,
// HAProxy's "fall N rise M" plus a draining state:
//
//   - fall consecutive failures take an up or draining replica down;
//   - rise consecutive ok results bring a down or draining replica up;
//   - a draining answer moves an up or down replica to draining at once,
//     with no count: the replica said so, and a drain window is sized for
//     the balancer to stop sending new work quickly.
//
// Any result of another kind breaks a streak; an unknown Result counts as a
// failure. fall and rise below 1 count as 1. Next does no I/O and reads no
// clock.
func Next(s Status, r Result, fall, rise int) Status {
	fall, rise = max(fall, 1), max(rise, 1)
	switch r {
	case ResultOK:
		if s.State == StateUp {
			return Status{State: StateUp}
		}
		if s.Successes+1 >= rise {
			return Status{State: StateUp}
		}
		return Status{State: s.State, Successes: s.Successes + 1}
	case ResultDraining:
		return Status{State: StateDraining}
	default:
		if s.State == StateDown {
			return Status{State: StateDown}
		}
		if s.Failures+1 >= fall {
			return Status{State: StateDown}
		}
		return Status{State: s.State, Failures: s.Failures + 1}
	}
}

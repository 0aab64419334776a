package upstream

import "github.com/mcpfleet/mcpfleet/internal/health"

// The health state machine lives in package health, pure, so the simulator
// runs the same one; these names keep the fleet's API as it was.

// State is a replica's health as the fleet sees it (health.State). The zero
// State is StateUp.
type State = health.State

// The states (see package health).
const (
	// StateUp means the replica takes new work.
	StateUp = health.StateUp
	// StateDown means checks (or connect failures) failed Fall times in a
	// row; the replica takes no new work until Rise checks pass in a row.
	StateDown = health.StateDown
	// StateDraining means the replica answered 503 {"status":"draining"}:
	// it still serves the sessions it holds and takes no new work.
	StateDraining = health.StateDraining
)

// Result is the outcome of one health observation (health.Result).
type Result = health.Result

// The results (see package health).
const (
	// ResultOK is a healthy answer (200 to a check).
	ResultOK = health.ResultOK
	// ResultFail is a failed check or a connect failure.
	ResultFail = health.ResultFail
	// ResultDraining is a 503 answer saying "status":"draining".
	ResultDraining = health.ResultDraining
)

// Status is a replica's state and the streak that may move it next
// (health.Status).
type Status = health.Status

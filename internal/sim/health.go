package sim

import (
	"time"

	"github.com/mcpfleet/mcpfleet/internal/balance"
	"github.com/mcpfleet/mcpfleet/internal/health"
)

// gateway is one gateway replica's own state: what it has seen of each
// replica's health, what it has in flight there, and its pick counter.
type gateway struct {
	seen     []health.Status // by replica, moved only by health.Next
	inFlight []int32         // by replica: executions this gateway sent there, not finished
	seq      uint64
	view     view            // the fleet as this gateway's balance.Pick sees it
	toolsAt  []time.Duration // by replica: since when its watcher knows it declares the new tool (new_tool only)
}

// newGateways returns n gateways, each seeing every replica up.
func newGateways(n int, reps []replica) []gateway {
	gws := make([]gateway, n)
	for g := range gws {
		gws[g].seen = make([]health.Status, len(reps))
		gws[g].inFlight = make([]int32, len(reps))
		gws[g].view = view{reps: reps, seen: gws[g].seen, inFlight: gws[g].inFlight}
	}
	return gws
}

// checksNeeded reports whether health can change at all: only mcpfleet
// routing uses what the gateway has seen, and only a deploy takes replicas
// out. Without them every check answers ok and moves nothing.
func (s *Scenario) checksNeeded() bool { return s.Routing == Fleet && s.Deploy }

// check is one round of every gateway's active health checks, as
// upstream.Checker runs them: a rebooting replica refuses the connection
// (fail), a draining one answers 503 draining, the others 200. The next
// round is scheduled health.DefaultInterval later.
func (e *engine) check() {
	for g := range e.gws {
		for r := range e.reps {
			e.observe(g, r, e.checkResult(r))
		}
	}
	e.heap.push(e.now+health.DefaultInterval, evCheck, 0, 0)
}

// checkResult is what a check of replica r answers now.
func (e *engine) checkResult(r int) health.Result {
	switch rep := &e.reps[r]; {
	case rep.down:
		return health.ResultFail
	case rep.draining:
		return health.ResultDraining
	}
	return health.ResultOK
}

// observe moves gateway g's view of replica r by one result, under the
// gateway's default fall and rise.
func (e *engine) observe(g, r int, res health.Result) {
	s := &e.gws[g].seen[r]
	was := s.State
	*s = health.Next(*s, res, health.DefaultFall, health.DefaultRise)
	if e.s.NewTool && was != health.StateUp && s.State == health.StateUp {
		e.cameUp(g, r)
	}
}

// attempt is gateway g forwarding one request to replica r: a rebooting
// replica refuses the connection, a draining one refuses new work (503
// draining); either report reaches the gateway's health as the forwarding
// path reports it (upstream's ReportConnectFailure, ReportDraining), and a
// request that reached its replica breaks an up replica's failure streak
// (ReportSuccess). A resume is not new work: a draining replica serves it.
func (e *engine) attempt(g, r int, newWork bool) (balance.Outcome, bool) {
	rep := &e.reps[r]
	switch {
	case rep.down:
		e.observe(g, r, health.ResultFail)
		return balance.NotDelivered, false
	case rep.draining && newWork:
		e.observe(g, r, health.ResultDraining)
		return balance.RefusedDraining, false
	}
	if s := &e.gws[g].seen[r]; s.State == health.StateUp {
		s.Failures = 0
	}
	return balance.Delivered, true
}

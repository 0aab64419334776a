package sim

import (
	"time"

	"github.com/mcpfleet/mcpfleet/internal/limit"
)

// placePoll is how often a call waiting for a replica's place asks again:
// the gateway's longest wait between tries (capacityPollMax), as places
// freed by other gateways send no signal.
const placePoll = 100 * time.Millisecond

// places is max_inflight on the simulated fleet (docs/GATEWAY.md, "Replica
// capacity"): package limit's Table holding each replica's places under its
// name, a cap and no caller, as the gateway's capacity store does
// (limit.Limiter.Reserve). With LocalLimits each gateway has its own table
// (the memory store, so every gateway lets max_inflight through); with
// SharedLimits one table serves all (the Redis store). Only mcpfleet
// routing (Fleet) has the cap.
type places struct {
	on     bool
	check  limit.Check
	tables []*limit.Table
	names  []string // the replicas' names, the keys of their places
}

func newPlaces(s *Scenario) places {
	p := places{on: s.MaxInflight > 0 && s.Routing == Fleet}
	if !p.on {
		return p
	}
	p.check = limit.Check{ToolCap: s.MaxInflight, LeaseTTL: heldTTL}
	n := 1
	if s.LimitStore == LocalLimits {
		n = s.Gateways
	}
	p.tables = make([]*limit.Table, n)
	for i := range p.tables {
		p.tables[i] = limit.NewTable(0)
	}
	for r := range s.Replicas {
		p.names = append(p.names, replicaName(r))
	}
	return p
}

func (p *places) table(g int) *limit.Table {
	if len(p.tables) == 1 {
		return p.tables[0]
	}
	return p.tables[g]
}

// reserve takes a place at replica r for a call through gateway g; ok is
// false when r is at its max_inflight. Without the cap it takes nothing.
func (e *engine) reserve(g, r int) (limit.LeaseID, bool) {
	if !e.places.on {
		return 0, true
	}
	d, id := e.places.table(g).Acquire("", e.places.names[r], e.places.check, epoch.Add(e.now))
	return id, d.Allowed
}

// releasePlace gives back a place gateway g took at replica r.
func (e *engine) releasePlace(g, r int, id limit.LeaseID) {
	if id != 0 {
		e.places.table(g).Release("", e.places.names[r], id)
	}
}

// waitPlace is call c at gateway g finding every replica it may go to at
// its max_inflight: it waits in the gateway's queue, asking again every
// placePoll, until QueueTimeout has passed since it first found them full;
// then (or at once without a queue) it is answered 503 with Retry-After and
// the client sends it again after limit.BusyRetry, as any re-send counting
// against max_reissues. Its admission lease is held while it waits.
func (e *engine) waitPlace(c int32, g int, lease limit.LeaseID) {
	cs := &e.calls[c]
	timeout := seconds(e.s.QueueTimeout)
	if !cs.waiting {
		cs.waiting, cs.waitSince, cs.waitGw, cs.waitLease = true, e.now, uint8(g), lease
		if timeout > 0 {
			e.res.CapacityWaits++
		}
	}
	if deadline := cs.waitSince + timeout; e.now < deadline {
		e.heap.push(min(e.now+placePoll, deadline), evPlace, c, 0)
		return
	}
	cs.waiting = false
	e.releaseLease(c, g, lease)
	e.res.CapacityRefused++
	e.reissue(c, limit.BusyRetry)
}

// placeRetry is a waiting call asking its gateway for a place again.
func (e *engine) placeRetry(c int32) {
	cs := &e.calls[c]
	e.forward(c, int(cs.waitGw), cs.waitLease)
}

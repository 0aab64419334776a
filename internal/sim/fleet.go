package sim

import (
	"fmt"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/balance"
	"github.com/mcpfleet/mcpfleet/internal/health"
	"github.com/mcpfleet/mcpfleet/internal/limit"
	"github.com/mcpfleet/mcpfleet/internal/ring"
)

// replica is one server replica's state on the virtual clock.
type replica struct {
	draining bool
	down     bool
	newTool  bool   // back from its reboot with the new version: it serves the new tool
	gen      uint32 // incremented by each reboot: sessions and buffers of older generations are gone

	busy   int     // executions holding a slot
	live   []int32 // executions accepted and not finished (running or queued)
	queue  []int32 // FIFO of waiting executions; cancelled ones are skipped
	qhead  int
	queued int // waiting executions still in queue

	busyArea   time.Duration // slot-time within the traffic window
	lastChange time.Duration
	maxQueue   int
}

// view is the fleet as package balance and package ring see it: in flight
// is what a gateway counts (running and queued), of every gateway or, with
// inFlight, of one. With seen nil a draining or rebooting replica is not
// eligible for new work (the deploy takes it out of rotation); with seen,
// eligibility is the gateway's health view.
type view struct {
	reps     []replica
	seen     []health.Status
	inFlight []int32
	all      bool // every replica eligible: the gateway's last resort
}

var _ balance.View = (*view)(nil)

// Len returns the number of replicas.
func (v *view) Len() int { return len(v.reps) }

// InFlight returns replica i's accepted, unfinished executions.
func (v *view) InFlight(i int) int64 {
	if v.inFlight != nil {
		return int64(v.inFlight[i])
	}
	return int64(len(v.reps[i].live))
}

// Eligible reports whether replica i takes new work.
func (v *view) Eligible(i int) bool {
	switch {
	case v.all:
		return true
	case v.seen != nil:
		return v.seen[i].State == health.StateUp
	}
	return !v.reps[i].draining && !v.reps[i].down
}

// newRing builds the ring over the replicas' names, as the gateway does
// over its upstreams.
func newRing(n int) *ring.Ring {
	names := make([]string, n)
	for i := range names {
		names[i] = replicaName(i)
	}
	r, err := ring.New(names, nil)
	if err != nil {
		panic(fmt.Sprintf("sim: building ring: %v", err)) // names are unique by construction
	}
	return r
}

// replicaName is replica i's name in figures and on the ring.
func replicaName(i int) string { return fmt.Sprintf("replica-%d", i+1) }

// clientKey is client c's routing key: the gateway hashes a stable
// identity; here the client's index, mixed (splitmix64 increment).
func clientKey(c int) uint64 { return uint64(c+1) * 0x9e3779b97f4a7c15 }

// pick chooses the replica for client c's request through gateway g under
// the scenario's routing, or -1 when no replica takes it. newWork is false
// for a resume.
func (e *engine) pick(c, g int, newWork bool) int {
	switch e.s.Routing {
	case RoundRobin:
		return e.pickRandom()
	case Affinity:
		return balance.Pick(balance.Hash, &e.view, balance.Input{Key: clientKey(c), Ring: e.ring}, nil)
	}
	return e.pickFleet(c, g, newWork)
}

// pickRandom picks uniformly among the eligible replicas: the model of
// round-robin, one random pick per attempt.
func (e *engine) pickRandom() int {
	n := 0
	for i := range e.reps {
		if e.view.Eligible(i) {
			n++
		}
	}
	if n == 0 {
		return -1
	}
	k := e.rng.IntN(n)
	for i := range e.reps {
		if e.view.Eligible(i) {
			if k == 0 {
				return i
			}
			k--
		}
	}
	return -1
}

// pickFleet is gateway g's send loop (gateway.send) on the simulated
// fleet: balance.Pick with bounded-load hashing over what the gateway has
// seen of the replicas' health, one attempt per pick (a refused attempt
// reaches its health), and balance.Step to decide whether to move on. Like
// the gateway it picks among every replica when health has taken them all
// out. It returns -1 when the loop ends without a replica (503 or 502:
// the client re-issues either after unroutableDelay).
func (e *engine) pickFleet(c, g int, newWork bool) int {
	i, _, _ := e.pickPlace(c, g, -1, newWork, false)
	return i
}

// pickPlace is pickFleet for call (-1 for a request that is not a
// tools/call) of client c, which holds a place at its replica (capped,
// with max_inflight): like the gateway's pickPlace, a pick whose
// replica is full moves on to the next the policy gives, without counting
// as a retry, and full reports that every replica left was full (the call
// then waits in the queue) rather than that none could be reached. A call
// of the new tool picks only among the replicas its tool filter allows
// (toolFilter), as the gateway's pick does, but for the last resort.
func (e *engine) pickPlace(c, g int, call int32, newWork, capped bool) (r int, place limit.LeaseID, full bool) {
	gw := &e.gws[g]
	var v balance.View = &gw.view
	if ok := e.toolFilter(call, g); ok != nil {
		v = toolView{View: v, ok: ok}
	}
	in := balance.Input{
		Seq: gw.seq, Rnd: e.rng.Uint64(), Key: clientKey(c), Ring: e.ring,
		Epsilon: e.s.HashEpsilon, MinLoad: int64(e.s.HashMinLoad),
	}
	gw.seq++
	var tried [MaxReplicas]int
	skip := tried[:0]
	nfull := 0
	for retries := 0; ; {
		i := balance.Pick(balance.Hash, v, in, skip)
		if i < 0 && len(skip) == 0 {
			i = balance.Pick(balance.Hash, &view{reps: e.reps, inFlight: gw.inFlight, all: true}, in, nil)
		}
		if i < 0 {
			return -1, 0, nfull > 0 // balance.Exhausted(retries), or every place taken
		}
		var id limit.LeaseID
		if capped {
			var ok bool
			if id, ok = e.reserve(g, i); !ok {
				nfull++
				skip = append(skip, i)
				continue
			}
		}
		outcome, ok := e.attempt(g, i, newWork)
		if ok {
			return i, id, false
		}
		e.releasePlace(g, i, id)
		e.res.Undelivered++
		a := balance.Attempt{Outcome: outcome, Retries: retries, MaxRetries: balance.DefaultRetries}
		if balance.Step(a) != balance.MoveOn {
			return -1, 0, false
		}
		skip = append(skip, i)
		in.Seq++
		retries++
	}
}

// route returns where client c's request through gateway g goes. With sessions in the
// replica (Local2025), mcpfleet follows the sealed session ID to the
// replica that minted it, as the gateway's route does, whatever its health
// says. A rebooting replica refuses the connection and a draining one
// refuses new work (503 draining): neither ran the request, and
// balance.PinnedVerdict says the session is lost, so the gateway answers
// 404 (pinnedLost) and the client re-initializes elsewhere. A resume (GET
// of a running call's stream) is not new work: a draining replica serves
// it. Everything else goes to pick.
//
// A call (not a resume) holds a place at its replica under max_inflight:
// place is that lease, and full reports every replica it may go to (its
// session's, when pinned) at its cap. call is the call sent, -1 for a
// resume: mcpfleet routes a call of the new tool by its tool filter,
// unless its session is pinned.
func (e *engine) route(c, g int, call int32, resume bool) (r int, place limit.LeaseID, pinnedLost, full bool) {
	cl := &e.clients[c]
	capped := !resume && e.places.on
	if e.s.Protocol != Local2025 || e.s.Routing != Fleet || !cl.hasSession {
		if e.s.Routing == Fleet {
			r, place, full = e.pickPlace(c, g, call, !resume, capped)
			return r, place, false, full
		}
		return e.pick(c, g, !resume), 0, false, false
	}
	r = int(cl.replica)
	if capped {
		var ok bool
		if place, ok = e.reserve(g, r); !ok {
			return -1, 0, false, true
		}
	}
	outcome, ok := e.attempt(g, r, !resume)
	if ok {
		return r, place, false, false
	}
	e.releasePlace(g, r, place)
	e.res.Undelivered++
	return -1, 0, balance.PinnedVerdict(outcome, false) == balance.SessionLost, false
}

// setBusy changes replica r's busy slots at now, accounting slot-time
// within the traffic window for utilisation.
func (e *engine) setBusy(r int, delta int, now time.Duration) {
	rep := &e.reps[r]
	a, b := min(rep.lastChange, e.end), min(now, e.end)
	rep.busyArea += time.Duration(rep.busy) * (b - a)
	rep.lastChange = now
	rep.busy += delta
}

// enqueue puts execution x at the back of replica r's queue.
func (e *engine) enqueue(r int, x int32) {
	rep := &e.reps[r]
	if rep.qhead > 0 && rep.qhead == len(rep.queue) {
		rep.queue, rep.qhead = rep.queue[:0], 0
	}
	rep.queue = append(rep.queue, x)
	rep.queued++
	rep.maxQueue = max(rep.maxQueue, rep.queued)
}

// dequeue returns the next waiting execution of replica r, or -1.
func (e *engine) dequeue(r int) int32 {
	rep := &e.reps[r]
	for rep.qhead < len(rep.queue) {
		x := rep.queue[rep.qhead]
		rep.qhead++
		if e.execs[x].state == queued {
			rep.queued--
			return x
		}
	}
	return -1
}

// addLive records execution x as accepted by its replica, and in flight
// for the gateway that sent it.
func (e *engine) addLive(x int32) {
	ex := &e.execs[x]
	rep := &e.reps[ex.replica]
	ex.livePos = int32(len(rep.live))
	rep.live = append(rep.live, x)
	e.gws[ex.gateway].inFlight[ex.replica]++
}

// dropLive removes execution x from its replica's accepted set.
func (e *engine) dropLive(x int32) {
	ex := &e.execs[x]
	rep := &e.reps[ex.replica]
	last := rep.live[len(rep.live)-1]
	rep.live[ex.livePos] = last
	e.execs[last].livePos = ex.livePos
	rep.live = rep.live[:len(rep.live)-1]
	e.gws[ex.gateway].inFlight[ex.replica]--
}

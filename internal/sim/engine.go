package sim

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/health"
	"github.com/mcpfleet/mcpfleet/internal/limit"
	"github.com/mcpfleet/mcpfleet/internal/ring"
)

// execState is where an execution is in its life.
type execState uint8

const (
	queued execState = iota
	running
	done
	killed
	cancelled
)

// execution is one attempt of a call that reached a replica: it waits for a
// slot, runs, and ends done, killed by a reboot or cancelled by a cut stream.
type execution struct {
	call     int32
	replica  int32
	session  uint32 // the client's session number it was sent with (Local2025)
	gen      uint32 // the replica's generation when it was accepted
	livePos  int32
	idleVer  uint32
	lease    limit.LeaseID // the call's admission lease, 0 none
	place    limit.LeaseID // its place at the replica (max_inflight), 0 none
	gateway  uint8         // the gateway that sent it
	state    execState
	attached bool // the client is reading its stream
	started  time.Duration
	lastByte time.Duration // the stream's last byte the client read
}

// callState is what the fleet has done with a logical call so far.
type callState struct {
	exec     int32 // the execution whose answer the client awaits; -1 none
	reissues int32
	resolved bool
	saw404   bool
	newTool  bool // a call of the new tool (first sent once clients knew of it)
	muts     int32
	mut1     time.Duration // the earliest mutation
	mut2     time.Duration // the second earliest: when the duplicate happened
	// While the call waits at a gateway for a replica's place: since when,
	// at which gateway, holding which admission lease.
	waiting   bool
	waitGw    uint8
	waitSince time.Duration
	waitLease limit.LeaseID
}

// client is one client's session (2025-11-25 modes).
type client struct {
	hasSession bool
	replica    int32
	gen        uint32 // the replica's generation when the session was minted
	session    uint32 // counts the client's sessions
}

// engine is one run's state. It is used by one goroutine.
type engine struct {
	s       *Scenario
	traffic []Call
	rng     *rand.Rand // the fleet's stream: routing picks only
	ring    *ring.Ring
	reps    []replica
	view    view      // the fleet with draining and rebooting replicas out of rotation
	gws     []gateway // the gateways in front of the fleet
	lim     limits
	places  places // max_inflight
	clients []client
	calls   []callState
	execs   []execution
	heap    eventHeap
	now     time.Duration
	end     time.Duration // end of traffic
	open    int           // unresolved calls plus live executions
	toolOut bool          // clients know of the new tool
	res     *Result
	tl      timeline
	lat     []time.Duration
}

// Run simulates s and returns every figure. It is deterministic: the same
// Scenario gives the same Result, byte for byte once encoded.
func Run(s Scenario) (*Result, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return run(&s, Traffic(&s)), nil
}

// MustRun is Run for scenarios known to be valid; it panics otherwise.
func MustRun(s Scenario) *Result {
	r, err := Run(s)
	if err != nil {
		panic(fmt.Sprintf("sim: %v", err))
	}
	return r
}

// run drives the fleet over the drawn traffic.
func run(s *Scenario, traffic []Call) *Result {
	e := newEngine(s, traffic)
	e.drive()
	return e.finish()
}

// drive runs every call and event until each call is resolved.
func (e *engine) drive() {
	s, traffic := e.s, e.traffic
	if s.Deploy {
		e.heap.push(seconds(s.DeployAt), evDrain, 0, 0)
	}
	if s.checksNeeded() {
		e.heap.push(health.DefaultInterval, evCheck, 0, 0)
	}
	next := 0
	for next < len(traffic) || e.open > 0 {
		at, ok := e.heap.peek()
		if next < len(traffic) && (!ok || traffic[next].At < at) {
			e.advance(traffic[next].At)
			e.open++
			e.calls[next].newTool = traffic[next].NewTool && e.toolOut
			e.send(int32(next))
			next++
			continue
		}
		if !ok {
			break
		}
		ev := e.heap.pop()
		e.advance(ev.at)
		e.dispatch(ev)
	}
}

func newEngine(s *Scenario, traffic []Call) *engine {
	e := &engine{
		s:       s,
		traffic: traffic,
		rng:     rand.New(rand.NewPCG(s.Seed, streamFleet)),
		ring:    newRing(s.Replicas),
		reps:    make([]replica, s.Replicas),
		clients: make([]client, s.Clients),
		calls:   make([]callState, len(traffic)),
		execs:   make([]execution, 0, len(traffic)+len(traffic)/8),
		end:     seconds(s.TrafficSeconds),
		res:     &Result{Issued: len(traffic)},
		lat:     make([]time.Duration, 0, len(traffic)),
	}
	e.view.reps = e.reps
	e.gws = newGateways(s.Gateways, e.reps)
	if s.NewTool {
		newGatewayTools(e.gws, s.Replicas)
	}
	e.lim = newLimits(s)
	e.places = newPlaces(s)
	e.tl.init(s.Replicas, int(s.TrafficSeconds)+64)
	for i := range e.calls {
		e.calls[i].exec = -1
	}
	return e
}

// advance moves the clock to t, sampling the timeline at each whole second passed.
func (e *engine) advance(t time.Duration) {
	for e.tl.next <= t {
		e.tl.sample(e.reps)
	}
	e.now = t
}

// dispatch runs one event.
func (e *engine) dispatch(ev event) {
	switch ev.kind {
	case evSend:
		e.send(ev.ref)
	case evEnd:
		e.complete(ev.ref)
	case evIdle:
		e.idleCheck(ev.ref, ev.ver)
	case evReconnect:
		e.reconnect(ev.ref)
	case evDrain:
		e.reps[ev.ref].draining = true
		e.heap.push(e.now+seconds(e.s.DrainWindow), evKill, ev.ref, 0)
	case evKill:
		e.kill(int(ev.ref))
	case evUp:
		e.reps[ev.ref].down = false
		if e.s.NewTool {
			e.upgraded(int(ev.ref))
		}
		if n := ev.ref + 1; int(n) < len(e.reps) {
			e.heap.push(e.now, evDrain, n, 0)
		}
	case evCheck:
		e.check()
	case evPlace:
		e.placeRetry(ev.ref)
	}
}

// accept hands call c's request, sent through gateway g and holding
// admission lease id and its place at r (max_inflight), to replica r: it runs at once if a slot is free, else
// waits in the replica's queue. The client reads its stream.
func (e *engine) accept(c int32, r, g int, id, place limit.LeaseID) {
	x := int32(len(e.execs))
	e.execs = append(e.execs, execution{
		call: c, replica: int32(r), session: e.clients[e.traffic[c].Client].session,
		gen: e.reps[r].gen, state: queued, attached: true, lastByte: e.now,
		lease: id, place: place, gateway: uint8(g),
	})
	e.res.Executions++
	e.open++
	e.calls[c].exec = x
	e.addLive(x)
	if e.reps[r].busy < e.s.Slots {
		e.start(x)
	} else {
		e.enqueue(r, x)
	}
	e.armIdle(x)
}

// start gives execution x a slot.
func (e *engine) start(x int32) {
	ex := &e.execs[x]
	ex.state, ex.started = running, e.now
	e.setBusy(int(ex.replica), 1, e.now)
	e.heap.push(e.now+e.traffic[ex.call].Duration, evEnd, x, 0)
}

// release frees execution x's place on its replica (its slot, or its
// place in the queue) and its admission lease, and starts the next waiting
// execution.
func (e *engine) release(x int32, to execState) {
	ex := &e.execs[x]
	was := ex.state
	ex.state = to
	e.dropLive(x)
	e.releaseLease(ex.call, int(ex.gateway), ex.lease)
	e.releasePlace(int(ex.gateway), int(ex.replica), ex.place)
	e.open--
	r := int(ex.replica)
	if was == queued {
		e.reps[r].queued--
		return
	}
	e.mutate(ex.call, ex.started, e.now)
	e.setBusy(r, -1, e.now)
	if e.reps[r].down {
		return // killed with the rest of its replica: nothing starts
	}
	if next := e.dequeue(r); next >= 0 {
		e.start(next)
	}
}

// mutate records the mutation of an execution of call c that ran from
// started until stop, if it reached its mutation point. With idempotency
// the tool recognises a re-executed call and mutates once.
func (e *engine) mutate(c int32, started, stop time.Duration) {
	at := e.traffic[c].MutateAt
	if at < 0 || stop-started < at {
		return
	}
	cs := &e.calls[c]
	if e.s.Idempotency && cs.muts > 0 {
		return
	}
	t := started + at
	e.res.Mutations++
	cs.muts++
	switch {
	case cs.muts == 1:
		cs.mut1 = t
	case t < cs.mut1:
		cs.mut1, cs.mut2 = t, cs.mut1
	case cs.muts == 2 || t < cs.mut2:
		cs.mut2 = t
	}
}

// complete ends execution x normally and answers its client if listening.
func (e *engine) complete(x int32) {
	ex := &e.execs[x]
	if ex.state != running {
		return // killed or cancelled before its end
	}
	e.release(x, done)
	if ex.attached {
		ex.attached = false
		e.answer(ex.call)
	}
}

// kill ends replica r's drain window: whatever still runs or waits is
// killed, sessions and stream buffers held in the replica are lost, and it
// reboots. Each killed execution's client sees its stream drop.
func (e *engine) kill(r int) {
	rep := &e.reps[r]
	rep.draining, rep.down = false, true
	rep.gen++
	for len(rep.live) > 0 {
		x := rep.live[len(rep.live)-1]
		e.release(x, killed)
		e.res.Killed++
		e.tl.add(e.now, &e.tl.killed)
		if ex := &e.execs[x]; ex.attached {
			ex.attached = false
			e.dropped(x)
		}
	}
	rep.queue, rep.qhead = rep.queue[:0], 0
	e.heap.push(e.now+seconds(e.s.RebootSeconds), evUp, int32(r), 0)
}

// armIdle schedules the check of execution x's stream for the moment its
// silence would exceed the idle timeout.
func (e *engine) armIdle(x int32) {
	if !e.s.idleCuts() {
		return
	}
	ex := &e.execs[x]
	ex.idleVer++
	e.heap.push(ex.lastByte+seconds(e.s.IdleTimeout)+1, evIdle, x, ex.idleVer)
}

// idleCheck cuts execution x's stream if nothing was sent on it for longer
// than the idle timeout. Progress events are bytes; they are not scheduled
// but computed here: a slow call sends one every Progress after its start.
func (e *engine) idleCheck(x int32, ver uint32) {
	ex := &e.execs[x]
	if !ex.attached || ex.idleVer != ver {
		return
	}
	if p := e.traffic[ex.call].Progress; p > 0 && ex.state == running {
		if k := (e.now - ex.started) / p; k >= 1 {
			if b := ex.started + k*p; b > ex.lastByte {
				ex.lastByte = b
				e.armIdle(x)
				return
			}
		}
	}
	e.res.IdleCuts++
	e.tl.add(e.now, &e.tl.cuts)
	ex.attached = false
	e.dropped(x)
}

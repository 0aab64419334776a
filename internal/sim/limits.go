package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/limit"
)

// epoch is the wall-clock instant of virtual time zero, for package limit,
// which reads time.Time.
var epoch = time.Unix(0, 0)

// heldTTL is the lease TTL of an admitted call. The gateway's limiter
// renews a running call's leases until it ends; the model releases them
// when the execution ends, so a lease held never lapses.
const heldTTL = 100 * 365 * 24 * time.Hour

// limits is the admission side of the gateways: package limit's Table, one
// per gateway (LocalLimits) or one for all (SharedLimits), and the random
// stream that spreads requests over the gateways.
type limits struct {
	on      bool
	check   limit.Check
	tables  []*limit.Table
	callers []string   // the callers' names, by client
	rng     *rand.Rand // gateway picks; nil with one gateway
	runaway int        // the runaway agent's client, -1 none

	admittedInWindow int // the runaway agent's admissions before the end of traffic
}

// newLimits sets up the gateways' admission for s.
func newLimits(s *Scenario) limits {
	l := limits{runaway: RunawayClient(s)}
	if s.Gateways > 1 {
		l.rng = rand.New(rand.NewPCG(s.Seed, streamGateway))
	}
	l.check = limitCheck(s)
	l.on = l.check.Rate > 0 || l.check.Concurrency > 0
	if !l.on {
		return l
	}
	n := 1
	if s.LimitStore == LocalLimits {
		n = s.Gateways
	}
	l.tables = make([]*limit.Table, n)
	for i := range l.tables {
		l.tables[i] = limit.NewTable(s.Clients)
	}
	l.callers = make([]string, s.Clients)
	for c := range l.callers {
		l.callers[c] = fmt.Sprintf("client-%d", c)
	}
	return l
}

// limitCheck is the check every call is held to, as the gateway's limiter
// builds it: a burst of zero means the rate rounded up, at least 1.
func limitCheck(s *Scenario) limit.Check {
	c := limit.Check{Rate: s.LimitRate, Concurrency: s.LimitConcurrency}
	if c.Rate > 0 {
		c.Burst = float64(s.LimitBurst)
		if s.LimitBurst == 0 {
			c.Burst = max(1, math.Ceil(c.Rate))
		}
	}
	if c.Concurrency > 0 {
		c.LeaseTTL = heldTTL
	}
	return c
}

// pickGateway is the gateway a request reaches: uniform over the
// gateways, from their own stream (an L4 balancer spreading connections).
func (e *engine) pickGateway() int {
	if e.lim.rng == nil {
		return 0
	}
	return e.lim.rng.IntN(len(e.gws))
}

// table is the limit table gateway g decides on.
func (e *engine) table(g int) *limit.Table {
	if len(e.lim.tables) == 1 {
		return e.lim.tables[0]
	}
	return e.lim.tables[g]
}

// admit is gateway g's admission of call c (a tools/call): package limit's
// decision at now. Refused, the client gets 429 and re-sends after the
// decision's RetryAfter, as any re-send counting against max_reissues; ok
// is false then. Admitted, the lease (0 when none applies) is the caller's
// until the execution ends, or until the request goes nowhere.
func (e *engine) admit(c int32, g int) (limit.LeaseID, bool) {
	cl := e.traffic[c].Client
	var id limit.LeaseID
	if e.lim.on {
		var d limit.Decision
		d, id = e.table(g).Acquire(e.lim.callers[cl], "", e.lim.check, epoch.Add(e.now))
		if !d.Allowed {
			e.res.Refused++
			if cl != e.lim.runaway {
				e.res.RefusedOthers++
			}
			e.tl.add(e.now, &e.tl.refused)
			e.reissue(c, d.RetryAfter)
			return 0, false
		}
	}
	if cl == e.lim.runaway {
		e.res.RunawayAdmitted++
		if e.now < e.end {
			e.lim.admittedInWindow++
		}
	}
	return id, true
}

// releaseLease gives back a lease gateway g's table granted to call c.
func (e *engine) releaseLease(c int32, g int, id limit.LeaseID) {
	if id != 0 {
		e.table(g).Release(e.lim.callers[e.traffic[c].Client], "", id)
	}
}

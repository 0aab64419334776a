package chaos

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// callSpec is one logical call of the fleet lab's mix.
type callSpec struct {
	n       int
	key     string        // the mutate counter and idempotency key: "call-<n>"
	tool    string        // "sleep" or "mutate"
	seconds float64       // how long the call runs
	at      float64       // mutate: fraction of the run at which it mutates
	client  int           // which client session sends it
	gap     time.Duration // time since the previous arrival
}

// arguments returns the tool's arguments.
func (c *callSpec) arguments() map[string]any {
	if c.tool == "mutate" {
		return map[string]any{"key": c.key, "seconds": c.seconds, "at": c.at}
	}
	return map[string]any{"seconds": c.seconds}
}

// mix draws the fleet lab's calls: Poisson arrivals, log-normal durations capped,
// a share of them mutating at a random point between 20% and 80% of their
// run. The same seed draws the same sequence.
type mix struct {
	rng     *rand.Rand
	rate    float64
	median  float64 // seconds
	sigma   float64
	cap     float64 // seconds
	share   float64
	clients int
	n       int
}

func newMix(o *Options) *mix {
	return &mix{
		rng:     rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15)),
		rate:    o.Rate,
		median:  o.Median.Seconds(),
		sigma:   o.Sigma,
		cap:     o.Cap.Seconds(),
		share:   o.MutateShare,
		clients: o.Sessions,
	}
}

// next draws the next call.
func (m *mix) next() callSpec {
	m.n++
	c := callSpec{
		n:       m.n,
		key:     fmt.Sprintf("call-%d", m.n),
		tool:    "sleep",
		gap:     time.Duration(m.rng.ExpFloat64() / m.rate * float64(time.Second)),
		seconds: math.Round(min(m.cap, m.median*math.Exp(m.sigma*m.rng.NormFloat64()))*1000) / 1000,
		client:  m.rng.IntN(m.clients),
	}
	mutate := m.rng.Float64() < m.share
	at := 0.2 + 0.6*m.rng.Float64()
	if mutate {
		c.tool, c.at = "mutate", math.Round(at*1000)/1000
	}
	return c
}

// callRecord is what happened to one logical call.
type callRecord struct {
	spec     callSpec
	attempts []attempt
	ok       bool // its final answer was a success
}

// traffic issues calls until stop says so, and collects their records.
type traffic struct {
	o       *Options
	clients []*client
	t0      time.Time
	timeout time.Duration // bound on one attempt

	mu      sync.Mutex // guards records
	records []*callRecord
	calls   sync.WaitGroup
}

// run issues calls at the mix's times until done is closed and at least
// o.Duration has passed, then waits for every call to end.
func (tr *traffic) run(ctx context.Context, done <-chan struct{}) {
	m := newMix(tr.o)
	next := time.Duration(0)
	for {
		spec := m.next()
		next += spec.gap
		if next >= tr.o.Duration && isClosed(done) {
			break
		}
		if err := sleep(ctx, next-time.Since(tr.t0)); err != nil {
			break
		}
		rec := &callRecord{spec: spec}
		tr.mu.Lock()
		tr.records = append(tr.records, rec)
		tr.mu.Unlock()
		tr.calls.Go(func() { tr.issue(ctx, rec) })
	}
	tr.calls.Wait()
}

// issue runs one logical call: the first attempt and up to Attempts-1
// re-issues, as a client does when a call fails, with a short backoff.
func (tr *traffic) issue(ctx context.Context, rec *callRecord) {
	cl := tr.clients[rec.spec.client]
	for i := range tr.o.Attempts {
		if i > 0 {
			if sleep(ctx, time.Duration(i)*100*time.Millisecond) != nil {
				return
			}
		}
		a := cl.call(ctx, &rec.spec, tr.o.IdempotencyKeys, tr.timeout, tr.t0)
		rec.attempts = append(rec.attempts, a)
		if a.Kind == kindOK {
			rec.ok = true
			return
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// isClosed reports whether ch is closed.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

package load

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/sim"
	"github.com/mcpfleet/mcpfleet/internal/testserver"
)

// tally turns what the clients, the cutter, the replicas and the ledger
// saw into the simulator's figures, in model seconds.
func (r *run) tally(trafficEnd time.Duration, samples [][]health, ledger []testserver.LedgerEntry, kills []time.Duration, f *fleet, cut *cutter) *sim.Result {
	o, s := r.o, &r.o.Scenario
	res := &sim.Result{Scenario: *s, Issued: len(r.calls), RunawayClient: r.m.runaway, Assumptions: []string{}}
	secs := int(math.Ceil(o.model(trafficEnd))) + 1
	tl := newTimeline(secs)
	var lat []time.Duration
	for i := range r.states {
		st := &r.states[i]
		switch {
		case st.done:
			res.Completed++
			lat = append(lat, time.Duration(float64(st.latency)*o.Speed))
		case st.failed:
			res.Failed++
		}
		if st.saw404 {
			res.CallsWith404++
		}
		res.Reissues += st.reissues
	}
	res.P50, res.P95, res.P99, res.MeanLatency = sim.Latencies(lat)
	for _, t := range r.failures {
		tl.add(o, t, tl.failures)
	}

	r.m.mu.Lock()
	res.NotFound = len(r.m.notFounds)
	for _, t := range r.m.notFounds {
		tl.add(o, t, tl.notFound)
	}
	res.Refused = len(r.m.refusals)
	for _, t := range r.m.refusals {
		tl.add(o, t, tl.refused)
	}
	res.RefusedOthers = r.m.refusedOth
	res.Unroutable = r.m.unroutables
	res.Resumes = r.m.resumes
	for c, n := range r.m.connects {
		res.Reinitializations += max(0, n-1)
		res.Executions += r.m.admissions[c]
	}
	if r.m.runaway >= 0 {
		res.RunawayAdmitted = r.m.admissions[r.m.runaway]
		in := 0
		for _, t := range r.m.runawayIn {
			if o.model(t) < s.TrafficSeconds {
				in++
			}
		}
		res.RunawayAdmittedRate = round3(float64(in) / s.TrafficSeconds)
	}
	r.m.mu.Unlock()

	if cut != nil {
		res.IdleCuts = cut.count()
		for _, t := range cut.times() {
			tl.add(o, t, tl.cuts)
		}
		if s.Protocol == sim.Rev2026 {
			res.Cancelled = res.IdleCuts // a dropped 2026-07-28 stream is its cancel
		}
	}
	res.Killed = len(kills)
	if f != nil {
		res.Killed = f.killed() // the deploy's stops and the last one
	}
	for _, t := range kills {
		tl.add(o, t, tl.killed)
	}

	res.Mutations = len(ledger)
	byKey := map[string][]string{}
	for _, e := range ledger {
		byKey[e.Key] = append(byKey[e.Key], e.Time)
	}
	for _, times := range byKey {
		if len(times) < 2 {
			continue
		}
		res.DuplicateMutations++
		slices.Sort(times)
		if at, err := time.Parse(time.RFC3339Nano, times[1]); err == nil {
			tl.add(o, at.Sub(r.t0), tl.duplicates)
		}
	}

	end := o.model(trafficEnd)
	res.EndSeconds = round3(end)
	res.ReplicaSeconds = round3(float64(s.Replicas) * end)
	res.Replicas, res.Utilization = utilization(s, samples, f)
	res.Timeline = tl.finish(samples, len(res.Replicas))
	return res
}

// utilization is each replica's busy share of its slots over the traffic
// window, from the /health samples, and the fleet's.
func utilization(s *sim.Scenario, samples [][]health, f *fleet) ([]sim.ReplicaFigures, float64) {
	if f == nil {
		return []sim.ReplicaFigures{}, 0
	}
	window := min(len(samples), int(s.TrafficSeconds))
	out := make([]sim.ReplicaFigures, len(f.replicas))
	var total float64
	for i, rep := range f.replicas {
		out[i].Name = rep.name
		busy := 0
		for k, sm := range samples {
			if k < window {
				busy += min(sm[i].Running, s.Slots)
			}
			out[i].LongestQueue = max(out[i].LongestQueue, sm[i].Queued)
		}
		if window > 0 && s.Slots > 0 {
			out[i].Utilization = round3(float64(busy) / float64(window*s.Slots))
		}
		total += out[i].Utilization
	}
	return out, round3(total / float64(len(out)))
}

// timeline is the per-model-second series of a real run.
type timeline struct {
	cuts, notFound, failures, duplicates, killed, refused []int32
}

func newTimeline(secs int) *timeline {
	mk := func() []int32 { return make([]int32, secs) }
	return &timeline{mk(), mk(), mk(), mk(), mk(), mk()}
}

// add counts one event at real time t since the start of traffic.
func (t *timeline) add(o *Options, at time.Duration, s []int32) {
	i := int(o.model(at))
	if i >= 0 && i < len(s) {
		s[i]++
	}
}

func (t *timeline) finish(samples [][]health, replicas int) sim.Timeline {
	tl := sim.Timeline{Cuts: t.cuts, NotFound: t.notFound, Failures: t.failures,
		DuplicateMutations: t.duplicates, Killed: t.killed, Refused: t.refused,
		InFlight: make([][]int32, replicas), Queue: make([][]int32, replicas)}
	for i := range replicas {
		tl.InFlight[i] = make([]int32, len(samples))
		tl.Queue[i] = make([]int32, len(samples))
		for k, sm := range samples {
			tl.InFlight[i][k] = int32(sm[i].Running)
			tl.Queue[i][k] = int32(sm[i].Queued)
		}
	}
	return tl
}

// notes say where a real run's figures differ in kind from the model's.
func notes(o *Options, f *fleet) []string {
	var n []string
	if f == nil {
		n = append(n, "an existing endpoint: killed executions, mutations, duplicates and utilization need the fleet's own counters and are 0 here")
	}
	if o.Scenario.IdleTimeout > 0 {
		n = append(n, fmt.Sprintf("the idle cutter (an HTTP proxy cutting a response silent for %s) runs in the load generator's process", o.real(o.Scenario.IdleTimeout)))
	}
	n = append(n, "executions are tools/call requests that reached a replica (answered neither 404, 429, 502 nor 503); not_found counts 404s to calls and resumes, not to standalone GET streams")
	return n
}

func round3(x float64) float64 { return math.Round(x*1e3) / 1e3 }

// Audit is what only a real fleet shows.
type Audit struct {
	// MissingMutations are mutating calls answered with a success whose
	// mutation is not in the ledger (must be 0).
	MissingMutations int `json:"missing_mutations"`
	// ResentByGateway are mutating calls with more ledger entries than the
	// attempts their client sent: only a gateway sending a delivered call
	// again explains one (must be 0).
	ResentByGateway int `json:"resent_by_gateway"`
	// SingleAttemptDuplicates are mutating calls sent once and applied
	// more than once (must be 0).
	SingleAttemptDuplicates int `json:"single_attempt_duplicates"`
	// GatewayRetries are the gateways' mcpfleet_retries_total by reason, as
	// the gateway processes running at the end count them.
	GatewayRetries map[string]int `json:"gateway_retries"`
}

// audit compares the ledger with what the clients were told.
func (r *run) audit(ledger []testserver.LedgerEntry, retries map[string]int) *Audit {
	entries := map[string]int{}
	for _, e := range ledger {
		entries[e.Key]++
	}
	a := &Audit{GatewayRetries: retries}
	if a.GatewayRetries == nil {
		a.GatewayRetries = map[string]int{}
	}
	for i := range r.calls {
		if !r.calls[i].Mutates() || r.o.Burn > 0 {
			continue
		}
		st, n := &r.states[i], entries[callKey(i)]
		switch {
		case st.done && n == 0:
			a.MissingMutations++
		case n > st.attempts:
			a.ResentByGateway++
		}
		if st.attempts == 1 && n > 1 {
			a.SingleAttemptDuplicates++
		}
	}
	return a
}

// callKey is logical call i's mutation key and idempotency key.
func callKey(i int) string { return fmt.Sprintf("call-%d", i) }

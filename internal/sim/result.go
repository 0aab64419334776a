package sim

import (
	"math"
	"slices"
	"time"
)

// Result is every figure of one run. Times are in seconds, rounded to the
// millisecond; shares to four decimals; so a Result encodes to the same
// bytes for the same Scenario.
type Result struct {
	// Scenario is what was run.
	Scenario Scenario `json:"scenario"`
	// Issued counts logical calls; Completed, those answered; Failed, those
	// the client gave up.
	Issued int `json:"calls_issued"`
	// Completed counts logical calls answered.
	Completed int `json:"completed"`
	// Failed counts logical calls given up.
	Failed int `json:"failed"`
	// DuplicateMutations counts logical calls whose mutation ran more than once.
	DuplicateMutations int `json:"duplicate_mutations"`
	// Mutations counts mutations applied, duplicates included.
	Mutations int `json:"mutations"`
	// Executions counts requests accepted by a replica (attempts that ran or waited).
	Executions int `json:"executions"`
	// Killed counts executions killed by a reboot, running or waiting.
	Killed int `json:"executions_killed"`
	// Cancelled counts executions cancelled by a dropped stream (2026-07-28).
	Cancelled int `json:"executions_cancelled"`
	// IdleCuts counts streams cut by the proxy idle timeout.
	IdleCuts int `json:"idle_cuts"`
	// Resumes counts streams resumed with Last-Event-ID.
	Resumes int `json:"resumes"`
	// NotFound counts 404 answers: a request at a replica without its session.
	NotFound int `json:"not_found"`
	// CallsWith404 counts logical calls that saw at least one 404.
	CallsWith404 int `json:"calls_with_404"`
	// Reinitializations counts initializes after a client's first.
	Reinitializations int `json:"reinitializations"`
	// Reissues counts calls sent again (after a 404, a cancel, a lost stream, a 503).
	Reissues int `json:"reissues"`
	// Unroutable counts requests the balancer had no replica for (503).
	Unroutable int `json:"unroutable"`
	// Undelivered counts mcpfleet requests that a rebooting or draining
	// replica refused unrun (the gateway moves them on, or answers 404 for a
	// sealed session).
	Undelivered int `json:"undelivered"`
	// Refused counts calls the gateways' limits refused (429).
	Refused int `json:"refused"`
	// RefusedOthers counts the 429s of every client but the runaway agent.
	RefusedOthers int `json:"refused_others"`
	// CapacityWaits counts calls that found every replica they could go to
	// at its max_inflight and waited at their gateway for a place.
	CapacityWaits int `json:"capacity_waits"`
	// CapacityRefused counts 503s for want of a place: no queue, or
	// queue_timeout passed.
	CapacityRefused int `json:"capacity_refused"`
	// UnknownTool counts calls of the new tool that reached a replica
	// without it, answered "unknown tool"; each is also a failed call.
	UnknownTool int `json:"unknown_tool"`
	// RunawayClient is the runaway agent's client, -1 without the injection.
	RunawayClient int `json:"runaway_client"`
	// RunawayAdmitted counts the runaway agent's calls that the limits let
	// through (every admission, re-sends included).
	RunawayAdmitted int `json:"runaway_admitted"`
	// RunawayAdmittedRate is the runaway agent's admissions per second
	// within the traffic window.
	RunawayAdmittedRate float64 `json:"runaway_admitted_rate"`
	// P50, P95 and P99 are latency percentiles of completed logical calls,
	// from first send to final answer (nearest rank).
	P50 float64 `json:"latency_p50_s"`
	// P95 is the 95th percentile latency.
	P95 float64 `json:"latency_p95_s"`
	// P99 is the 99th percentile latency.
	P99 float64 `json:"latency_p99_s"`
	// MeanLatency is the mean latency of completed calls.
	MeanLatency float64 `json:"latency_mean_s"`
	// Utilization is busy slot-time over all slots during the traffic window.
	Utilization float64 `json:"utilization"`
	// Replicas are per-replica figures.
	Replicas []ReplicaFigures `json:"replicas"`
	// EndSeconds is when the last call was resolved (at least the traffic's end).
	EndSeconds float64 `json:"end_s"`
	// ReplicaSeconds is the cost: replicas times EndSeconds.
	ReplicaSeconds float64 `json:"replica_seconds"`
	// Timeline is per-second series for charts.
	Timeline Timeline `json:"timeline"`
	// Assumptions are the model's decisions where the lab's description
	// leaves a choice open.
	Assumptions []string `json:"assumptions"`
}

// ReplicaFigures are one replica's figures.
type ReplicaFigures struct {
	// Name is the replica's name on the ring.
	Name string `json:"name"`
	// Utilization is its busy slot-time over its slot-time in the traffic window.
	Utilization float64 `json:"utilization"`
	// LongestQueue is the most executions that waited at once.
	LongestQueue int `json:"longest_queue"`
}

// Timeline is per-second series; element i covers second i of the run.
// Replica series are indexed by replica, then second, sampled at the
// start of each second; counts are of events within the second.
type Timeline struct {
	// InFlight is each replica's executions running or waiting.
	InFlight [][]int32 `json:"in_flight"`
	// Queue is each replica's waiting executions.
	Queue [][]int32 `json:"queue"`
	// Cuts counts idle-timeout cuts.
	Cuts []int32 `json:"cuts"`
	// NotFound counts 404 answers.
	NotFound []int32 `json:"not_found"`
	// Failures counts calls given up.
	Failures []int32 `json:"failures"`
	// DuplicateMutations counts second mutations of a logical call.
	DuplicateMutations []int32 `json:"duplicate_mutations"`
	// Killed counts executions killed by reboots.
	Killed []int32 `json:"killed"`
	// Refused counts 429s.
	Refused []int32 `json:"refused"`
}

// timeline gathers the Timeline as the clock advances.
type timeline struct {
	next                                            time.Duration // the next second to sample
	inFlight, queue                                 [][]int32
	cuts, notFound, failures, dups, killed, refused []int32
}

func (t *timeline) init(replicas, secondsHint int) {
	t.inFlight = make([][]int32, replicas)
	t.queue = make([][]int32, replicas)
	for i := range replicas {
		t.inFlight[i] = make([]int32, 0, secondsHint)
		t.queue[i] = make([]int32, 0, secondsHint)
	}
}

// sample records the replicas' state at second t.next and moves on.
func (t *timeline) sample(reps []replica) {
	for i := range reps {
		t.inFlight[i] = append(t.inFlight[i], int32(len(reps[i].live)))
		t.queue[i] = append(t.queue[i], int32(reps[i].queued))
	}
	t.next += time.Second
}

// add counts one event at now in series s.
func (t *timeline) add(now time.Duration, s *[]int32) {
	i := int(now / time.Second)
	for len(*s) <= i {
		*s = append(*s, 0)
	}
	(*s)[i]++
}

// finish makes every counter series as long as the samples.
func (t *timeline) finish() Timeline {
	n := len(t.inFlight[0])
	fit := func(s []int32) []int32 {
		out := make([]int32, n)
		copy(out, s)
		return out
	}
	return Timeline{
		InFlight: t.inFlight, Queue: t.queue,
		Cuts: fit(t.cuts), NotFound: fit(t.notFound), Failures: fit(t.failures),
		DuplicateMutations: fit(t.dups), Killed: fit(t.killed), Refused: fit(t.refused),
	}
}

// finish computes the figures at the end of the run.
func (e *engine) finish() *Result {
	res := e.res
	res.Scenario = *e.s
	end := max(e.now, e.end)
	e.advance(end)
	for i := range e.reps {
		e.setBusy(i, 0, end)
	}
	for i := range e.calls {
		cs := &e.calls[i]
		if cs.saw404 {
			res.CallsWith404++
		}
		if cs.muts > 1 {
			res.DuplicateMutations++
			e.tl.add(cs.mut2, &e.tl.dups)
		}
	}
	res.P50, res.P95, res.P99, res.MeanLatency = latencies(e.lat)
	window := float64(e.end) * float64(e.s.Slots)
	var area float64
	for i := range e.reps {
		a := float64(e.reps[i].busyArea)
		area += a
		res.Replicas = append(res.Replicas, ReplicaFigures{
			Name: replicaName(i), Utilization: round(a/window, 1e4), LongestQueue: e.reps[i].maxQueue,
		})
	}
	res.Utilization = round(area/(window*float64(len(e.reps))), 1e4)
	res.RunawayClient = e.lim.runaway
	res.RunawayAdmittedRate = round(float64(e.lim.admittedInWindow)/e.s.TrafficSeconds, 1e3)
	res.EndSeconds = round(end.Seconds(), 1e3)
	res.ReplicaSeconds = round(float64(len(e.reps))*end.Seconds(), 1e3)
	res.Timeline = e.tl.finish()
	res.Assumptions = Assumptions()
	return res
}

// Latencies returns the p50, p95, p99 and mean of lat in seconds (nearest
// rank, rounded to the millisecond), as a Result gives them; zeros when lat
// is empty. It sorts lat.
func Latencies(lat []time.Duration) (p50, p95, p99, mean float64) { return latencies(lat) }

// latencies is Latencies.
func latencies(lat []time.Duration) (p50, p95, p99, mean float64) {
	if len(lat) == 0 {
		return 0, 0, 0, 0
	}
	slices.Sort(lat)
	rank := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(lat)))) - 1
		return round(lat[max(i, 0)].Seconds(), 1e3)
	}
	var sum float64
	for _, d := range lat {
		sum += d.Seconds()
	}
	return rank(0.50), rank(0.95), rank(0.99), round(sum/float64(len(lat)), 1e3)
}

// round rounds x to 1/scale.
func round(x, scale float64) float64 { return math.Round(x*scale) / scale }

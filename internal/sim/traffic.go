package sim

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Stream identifiers: each random stream is a PCG seeded with the run's
// seed and its own stream constant, so drawing from one never shifts another.
const (
	streamTraffic = 0x7472_6166_6669_6301 // "traffic"
	streamHot     = 0x686f_7463_6c69_6e74 // "hotclint"
	streamFleet   = 0x666c_6565_7473_6574 // "fleetset"
	streamRunaway = 0x7275_6e61_7761_7921 // "runaway!"
	streamGateway = 0x6761_7465_7761_7973 // "gateways"
	// The new tool's draws: one number per call, from a stream for each
	// origin of calls, so that neither the hot client nor the runaway agent
	// shifts which of the other calls call it.
	streamNewTool        = 0x6e65_7774_6f6f_6c30 // "newtool0"
	streamNewToolHot     = 0x6e65_7774_6f6f_6c68 // "newtoolh"
	streamNewToolRunaway = 0x6e65_7774_6f6f_6c72 // "newtoolr"
)

// Call is one logical tool call of the drawn traffic. Times are offsets on
// the virtual clock.
type Call struct {
	// At is when the client first sends the call.
	At time.Duration
	// Client is the index of the calling client.
	Client int
	// Duration is how long one execution runs once it has a slot.
	Duration time.Duration
	// Progress is the interval between progress events; zero means none.
	Progress time.Duration
	// MutateAt is when, after its start, an execution mutates state; -1
	// means the call does not mutate.
	MutateAt time.Duration
	// Slow reports a slow tool (the slow-tools injection).
	Slow bool
	// Hot reports a call of the hot client's extra rate.
	Hot bool
	// Runaway reports a call of the runaway agent's extra rate.
	Runaway bool
	// NewTool reports a call of the new tool (the new-tool injection),
	// once clients know of it: a call sent before then calls a tool every
	// replica serves.
	NewTool bool
}

// Mutates reports whether the call mutates state.
func (c *Call) Mutates() bool { return c.MutateAt >= 0 }

// Traffic draws the calls of s in the order they are sent. It depends only
// on the workload fields of s: every call draws the same numbers from the
// traffic stream whatever the injections, so turning slow tools on changes
// only the slow calls' durations, the hot client's and the runaway
// agent's extra calls come from streams of their own, and so does which
// calls call the new tool.
func Traffic(s *Scenario) []Call {
	end := seconds(s.TrafficSeconds)
	calls := make([]Call, 0, int(s.TotalRate()*s.TrafficSeconds*1.05)+16)
	rng := rand.New(rand.NewPCG(s.Seed, streamTraffic))
	t := 0.0
	for {
		t += rng.ExpFloat64() / s.ArrivalRate
		if seconds(t) >= end {
			break
		}
		c := drawCall(s, rng, seconds(t))
		c.Client = rng.IntN(s.Clients)
		calls = append(calls, c)
	}
	markNewTool(s, calls, streamNewTool)
	extra := false
	if s.HotClient && s.HotFactor > 0 {
		n := len(calls)
		calls, extra = appendHot(s, calls, end), true
		markNewTool(s, calls[n:], streamNewToolHot)
	}
	if s.Runaway && s.RunawayRate > 0 {
		n := len(calls)
		calls, extra = appendRunaway(s, calls, end), true
		markNewTool(s, calls[n:], streamNewToolRunaway)
	}
	if extra {
		slices.SortStableFunc(calls, func(a, b Call) int { return cmp.Compare(a.At, b.At) })
	}
	return calls
}

// markNewTool marks the calls of the new tool with the injection on: each
// call draws one number from stream, in order, and calls it when that is
// under NewToolShare.
func markNewTool(s *Scenario, calls []Call, stream uint64) {
	if !s.NewTool || s.NewToolShare <= 0 {
		return
	}
	rng := rand.New(rand.NewPCG(s.Seed, stream))
	for i := range calls {
		calls[i].NewTool = rng.Float64() < s.NewToolShare
	}
}

// RunawayClient returns the runaway agent's client, or -1 without the
// injection. It is the first number of the runaway stream, drawn uniformly
// from the clients like the hot client (the two may be the same client).
func RunawayClient(s *Scenario) int {
	if !s.Runaway || s.RunawayRate <= 0 {
		return -1
	}
	return rand.New(rand.NewPCG(s.Seed, streamRunaway)).IntN(s.Clients)
}

// appendRunaway appends the runaway agent's extra calls, a Poisson stream
// of RunawayRate per second drawn from their own stream after its client.
func appendRunaway(s *Scenario, calls []Call, end time.Duration) []Call {
	rng := rand.New(rand.NewPCG(s.Seed, streamRunaway))
	agent := rng.IntN(s.Clients)
	t := 0.0
	for {
		t += rng.ExpFloat64() / s.RunawayRate
		if seconds(t) >= end {
			return calls
		}
		c := drawCall(s, rng, seconds(t))
		c.Client, c.Runaway = agent, true
		calls = append(calls, c)
	}
}

// appendHot appends the hot client's extra calls, drawn from their own stream.
func appendHot(s *Scenario, calls []Call, end time.Duration) []Call {
	rng := rand.New(rand.NewPCG(s.Seed, streamHot))
	hot := rng.IntN(s.Clients)
	rate := s.HotFactor * s.ArrivalRate / float64(s.Clients)
	t := 0.0
	for {
		t += rng.ExpFloat64() / rate
		if seconds(t) >= end {
			return calls
		}
		c := drawCall(s, rng, seconds(t))
		c.Client, c.Hot = hot, true
		calls = append(calls, c)
	}
}

// drawCall draws one call's duration, slowness and mutation. It always
// draws the same count of numbers, in the same order, so the stream stays
// aligned whatever the settings.
func drawCall(s *Scenario, rng *rand.Rand, at time.Duration) Call {
	d := s.DurationMedian * math.Exp(s.DurationSigma*rng.NormFloat64())
	d = min(d, s.DurationCap)
	slowU, slowD, prog := rng.Float64(), rng.Float64(), rng.Float64()
	mutU, mutP := rng.Float64(), rng.Float64()
	c := Call{At: at, Duration: max(seconds(d), 1), MutateAt: -1}
	if s.SlowTools && slowU < s.SlowShare {
		c.Slow = true
		c.Duration = seconds(s.SlowMin + slowD*(s.SlowMax-s.SlowMin))
		c.Progress = seconds(s.ProgressMin + prog*(s.ProgressMax-s.ProgressMin))
	}
	if mutU < s.MutateShare {
		frac := s.MutateFrom + mutP*(s.MutateTo-s.MutateFrom)
		c.MutateAt = time.Duration(math.Round(frac * float64(c.Duration)))
	}
	return c
}

// seconds converts seconds to virtual time, rounded to the nanosecond.
func seconds(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }

// MeanDuration is the mean of a log-normal duration (median m, sigma)
// capped at c: E[min(X, c)] = e^(mu + sigma^2/2) Phi((ln c - mu - sigma^2)/sigma)
// + c (1 - Phi((ln c - mu)/sigma)), mu = ln m. The theory checks use it.
func MeanDuration(median, sigma, c float64) float64 {
	if sigma == 0 {
		return min(median, c)
	}
	mu := math.Log(median)
	phi := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	lc := math.Log(c)
	return math.Exp(mu+sigma*sigma/2)*phi((lc-mu-sigma*sigma)/sigma) + c*(1-phi((lc-mu)/sigma))
}

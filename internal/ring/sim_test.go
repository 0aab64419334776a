package ring

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// simConfig describes a hot-client simulation: identities send requests as
// independent Poisson processes on virtual time, one of them hotFactor
// times as often as each other, and each request is served for an
// exponentially distributed time.
type simConfig struct {
	members      int
	keys         []uint64 // one per identity
	hot          int      // index of the hot identity in keys
	hotFactor    float64  // the hot identity's rate over each other identity's
	meanInFlight float64  // target mean in flight per member (Little's law)
	meanService  float64  // seconds
	duration     float64  // seconds of virtual time
	epsilon      float64  // Pick's bound; 0 is plain consistent hashing
	seed         uint64
}

// simResult is what a simulation measured.
type simResult struct {
	arrivals int
	peaks    []int64 // each member's peak in flight over the run
	// peakRatio is the largest peak over the mean of the peaks.
	peakRatio float64
	// worstRatio is the worst max/mean in flight across members right
	// after a placement, once the mean is at least 10.
	worstRatio float64
	// hotAway is the share of the hot identity's requests placed away
	// from its home member.
	hotAway float64
	// meanInFlight is the mean in flight per member seen by arrivals
	// (before placement): by PASTA, the time average.
	meanInFlight float64
}

// departure is a request in flight: its member and when it completes.
type departure struct {
	at     float64
	member int
}

// departures is a binary min-heap of departures by completion time,
// typed to keep the simulation free of container/heap's boxing.
type departures []departure

// push adds x.
func (d *departures) push(x departure) {
	*d = append(*d, x)
	h := *d
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if h[parent].at <= h[i].at {
			break
		}
		h[parent], h[i] = h[i], h[parent]
		i = parent
	}
}

// pop removes and returns the earliest departure; d must not be empty.
func (d *departures) pop() departure {
	h := *d
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		least, l, r := i, 2*i+1, 2*i+2
		if l < len(h) && h[l].at < h[least].at {
			least = l
		}
		if r < len(h) && h[r].at < h[least].at {
			least = r
		}
		if least == i {
			break
		}
		h[i], h[least] = h[least], h[i]
		i = least
	}
	*d = h
	return top
}

// simulate runs the simulation: each arrival is routed with Pick over the
// live in-flight counts. It is deterministic in cfg.
func simulate(tb testing.TB, cfg simConfig) simResult {
	tb.Helper()
	r := mustNew(tb, memberNames(cfg.members), nil)
	keys := cfg.keys
	rng := rand.New(rand.NewPCG(cfg.seed, cfg.seed^0x9e3779b97f4a7c15))
	rate := float64(cfg.members) * cfg.meanInFlight / cfg.meanService
	weight := cfg.hotFactor + float64(len(keys)-1)
	hotHome := r.Pick(keys[cfg.hot], idle(cfg.members), 0, nil)

	f := idle(cfg.members)
	var loads Loads = f
	var inFlight departures
	res := simResult{peaks: make([]int64, cfg.members)}
	hot, hotAway := 0, 0
	for now := rng.ExpFloat64() / rate; now < cfg.duration; now += rng.ExpFloat64() / rate {
		for len(inFlight) > 0 && inFlight[0].at <= now {
			f.load[inFlight.pop().member]--
		}
		id := cfg.pickIdentity(rng.Float64() * weight)
		i := r.Pick(keys[id], loads, cfg.epsilon, nil)
		f.load[i]++
		inFlight.push(departure{at: now + rng.ExpFloat64()*cfg.meanService, member: i})
		if id == cfg.hot {
			hot++
			if i != hotHome {
				hotAway++
			}
		}
		res.arrivals++
		res.observe(f.load)
	}
	res.meanInFlight /= float64(res.arrivals * cfg.members)
	res.hotAway = float64(hotAway) / float64(max(hot, 1))
	var sum int64
	for _, p := range res.peaks {
		sum += p
	}
	res.peakRatio = float64(slices.Max(res.peaks)) * float64(len(res.peaks)) / float64(sum)
	return res
}

// pickIdentity maps u, uniform in [0, hotFactor+len(keys)-1), to an
// identity: the hot one for u < hotFactor, else the others in turn.
func (cfg simConfig) pickIdentity(u float64) int {
	if u < cfg.hotFactor {
		return cfg.hot
	}
	id := min(int(u-cfg.hotFactor), len(cfg.keys)-2)
	if id >= cfg.hot {
		id++
	}
	return id
}

// observe records the members' loads right after a placement.
func (res *simResult) observe(load []int64) {
	var sum int64
	for i, l := range load {
		res.peaks[i] = max(res.peaks[i], l)
		sum += l
	}
	res.meanInFlight += float64(sum - 1)
	mean := float64(sum) / float64(len(load))
	if mean >= 10 {
		res.worstRatio = max(res.worstRatio, float64(slices.Max(load))/mean)
	}
}

// TestHotClient: with one identity sending ten times the rate of each of
// 99 others, bounded loads keep every member's peak in flight within 25% of
// the mean peak. Plain consistent hashing is run on the same arrivals for
// contrast. The first scenario is the specified one (identities
// "identity-0" to "identity-99", the first one hot); the others vary the
// identities and put the hot one where it hurts plain hashing most.
func TestHotClient(t *testing.T) {
	var bounded, plain []simResult
	for _, sc := range hotClientScenarios(t) {
		t.Run(sc.name, func(t *testing.T) {
			cfg := sc.cfg
			cfg.epsilon = 0.25
			got, base := simulate(t, cfg), simulate(t, sc.cfg)
			bounded, plain = append(bounded, got), append(plain, base)
			logSim(t, "epsilon 0.25", got)
			logSim(t, "epsilon 0", base)
			if got.peakRatio > 1.25 {
				t.Errorf("bounded: max peak/mean peak = %.3f, want at most 1.25", got.peakRatio)
			}
			if got.worstRatio >= base.worstRatio {
				t.Errorf("bounded worst instantaneous max/mean %.3f is no better than plain hashing's %.3f",
					got.worstRatio, base.worstRatio)
			}
		})
	}
	logRange(t, "epsilon 0.25", bounded)
	logRange(t, "epsilon 0", plain)
}

type scenario struct {
	name string
	cfg  simConfig
}

// hotClientScenarios returns 3 members, 100 identities and a mean of 25
// requests in flight per member served for 1 s on average, over 1,000 s of
// virtual time: about 75,000 arrivals. Each of six identity sets is run
// with its first identity hot and, unless that one already is, with the
// hot identity homed on the member that is home to the most identities.
func hotClientScenarios(tb testing.TB) []scenario {
	base := simConfig{
		members:      3,
		hotFactor:    10,
		meanInFlight: 25,
		meanService:  1,
		duration:     1000,
		seed:         1,
	}
	r := mustNew(tb, memberNames(base.members), nil)
	var out []scenario
	for set := range 6 {
		cfg := base
		prefix := fmt.Sprintf("set%d-identity", set)
		if set == 0 {
			prefix = "identity"
		}
		cfg.keys = identityKeys(prefix, 100)
		out = append(out, scenario{fmt.Sprintf("%s-0_hot", prefix), cfg})
		if cfg.hot = busiestIdentity(r, cfg.keys); cfg.hot != 0 {
			out = append(out, scenario{fmt.Sprintf("%s-%d_hot_on_busiest", prefix, cfg.hot), cfg})
		}
	}
	return out
}

func logSim(t *testing.T, name string, res simResult) {
	t.Helper()
	t.Logf("%-12s %d arrivals, mean in flight per member %.1f: peaks %v, max peak/mean peak %.3f, worst instantaneous max/mean %.3f, hot identity off home %.1f%%",
		name, res.arrivals, res.meanInFlight, res.peaks, res.peakRatio, res.worstRatio, 100*res.hotAway)
}

// logRange logs the range of the figures over all scenarios.
func logRange(t *testing.T, name string, rs []simResult) {
	t.Helper()
	if len(rs) == 0 {
		return
	}
	lo, hi := rs[0], rs[0]
	loPeak, hiPeak := slices.Max(rs[0].peaks), slices.Max(rs[0].peaks)
	for _, r := range rs {
		lo.peakRatio, hi.peakRatio = min(lo.peakRatio, r.peakRatio), max(hi.peakRatio, r.peakRatio)
		lo.worstRatio, hi.worstRatio = min(lo.worstRatio, r.worstRatio), max(hi.worstRatio, r.worstRatio)
		loPeak, hiPeak = min(loPeak, slices.Max(r.peaks)), max(hiPeak, slices.Max(r.peaks))
	}
	t.Logf("%-12s over %d scenarios: max peak/mean peak %.3f to %.3f, highest peak %d to %d, worst instantaneous max/mean %.3f to %.3f",
		name, len(rs), lo.peakRatio, hi.peakRatio, loPeak, hiPeak, lo.worstRatio, hi.worstRatio)
}

// busiestIdentity returns the first identity whose home member is home to
// the most identities.
func busiestIdentity(r *Ring, keys []uint64) int {
	homes := make([]int, len(keys))
	count := make([]int, r.Len())
	for id, key := range keys {
		homes[id] = r.Pick(key, idle(r.Len()), 0, nil)
		count[homes[id]]++
	}
	busiest := slices.Index(count, slices.Max(count))
	return slices.Index(homes, busiest)
}

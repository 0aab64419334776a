package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/sim"
)

// simMeta are the sim command's flags that are not scenario settings.
type simMeta struct {
	scenario    string
	mission     int
	json        bool
	sweep       string
	workers     int
	assumptions bool
	randomSeed  bool
}

// runSim runs the sim command (its help: helptext.go).
func runSim(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	meta, base, err := parseSimFlags(args)
	if err != nil {
		return err
	}
	var mission *sim.Mission
	if meta.mission > 0 {
		m, _ := sim.MissionByNumber(meta.mission) // checked while parsing
		mission = &m
	}
	if meta.sweep != "" {
		return runSweep(ctx, meta, base, mission, stdout, stderr)
	}
	res, err := sim.Run(base)
	if err != nil {
		return usageError{err}
	}
	var stars *sim.Stars
	if mission != nil {
		st, err := mission.Evaluate(base)
		if err != nil {
			return err
		}
		stars = &st
	}
	if meta.json {
		if mission == nil {
			return sim.WriteJSON(stdout, res)
		}
		return sim.WriteJSON(stdout, missionReport{Mission: mission, Stars: stars, Result: res})
	}
	if mission != nil {
		writeMission(stdout, mission, stars)
	}
	if err := sim.WriteSummary(stdout, res); err != nil {
		return err
	}
	if meta.assumptions {
		for _, a := range res.Assumptions {
			fmt.Fprintf(stdout, "- %s\n", a)
		}
	}
	return nil
}

// missionReport is the JSON of a mission run.
type missionReport struct {
	Mission *sim.Mission `json:"mission"`
	Stars   *sim.Stars   `json:"stars"`
	Result  *sim.Result  `json:"result"`
}

// parseSimFlags parses args twice: once to learn the mission and scenario
// file, once more over the setup they give, so the flags given win.
func parseSimFlags(args []string) (simMeta, sim.Scenario, error) {
	var meta simMeta
	scratch := sim.Default()
	fs := newSimFlagSet(&meta, &scratch)
	if err := parseFlags(fs, args); err != nil {
		return meta, scratch, err
	}
	base, err := layeredScenario(meta.mission, false, meta.scenario)
	if err != nil {
		return meta, base, err
	}
	var again simMeta
	fs = newSimFlagSet(&again, &base)
	if err := parseFlags(fs, args); err != nil {
		return meta, base, err
	}
	if meta.randomSeed {
		seedGiven := false
		fs.Visit(func(f *flag.Flag) { seedGiven = seedGiven || f.Name == "seed" })
		if seedGiven {
			return meta, base, usageError{errors.New("--new-seed and --seed: give one")}
		}
		base.Seed = rand.Uint64()
	}
	if meta.workers < 0 {
		return meta, base, usageError{errors.New("--workers: must not be negative")}
	}
	if err := base.Validate(); err != nil {
		return meta, base, usageError{err}
	}
	return meta, base, nil
}

// newSimFlagSet defines the sim command's flags over meta and s.
func newSimFlagSet(meta *simMeta, s *sim.Scenario) *flag.FlagSet {
	fs := newFlagSet("sim")
	fs.StringVar(&meta.scenario, "scenario", "", "read settings from the JSON `file`")
	fs.IntVar(&meta.mission, "mission", 0, fmt.Sprintf("load mission `N`'s broken setup (1 to %d) and report the stars earned", len(sim.Missions())))
	fs.BoolVar(&meta.json, "json", false, "print every figure and the timeline as JSON")
	fs.StringVar(&meta.sweep, "sweep", "", "run one setting per value side by side: `PARAM=a,b,c`, e.g. replicas=2,3,4")
	fs.IntVar(&meta.workers, "workers", 0, "sweep runs at once; 0 means one per core")
	fs.BoolVar(&meta.assumptions, "assumptions", false, "list the model's assumptions after the summary")
	fs.BoolVar(&meta.randomSeed, "new-seed", false, "draw a new random seed (shown in the output, to run again with --seed)")
	defineScenarioFlags(fs, s)
	return fs
}

// defineScenarioFlags binds one flag to each field of s.
func defineScenarioFlags(fs *flag.FlagSet, s *sim.Scenario) {
	fs.Uint64Var(&s.Seed, "seed", s.Seed, "random seed of traffic and fleet")
	fs.IntVar(&s.Clients, "clients", s.Clients, "clients")
	fs.Float64Var(&s.ArrivalRate, "arrival-rate", s.ArrivalRate, "calls per second, all clients (Poisson)")
	fs.Var((*secondsFlag)(&s.TrafficSeconds), "traffic", "seconds of traffic")
	fs.Var((*secondsFlag)(&s.DurationMedian), "duration-median", "median call duration, seconds (log-normal)")
	fs.Float64Var(&s.DurationSigma, "duration-sigma", s.DurationSigma, "log-normal sigma of call durations")
	fs.Var((*secondsFlag)(&s.DurationCap), "duration-cap", "cap on ordinary call durations, seconds")
	fs.Float64Var(&s.MutateShare, "mutate-share", s.MutateShare, "share of calls that mutate state")
	fs.Float64Var(&s.MutateFrom, "mutate-from", s.MutateFrom, "earliest mutation point, fraction of the run")
	fs.Float64Var(&s.MutateTo, "mutate-to", s.MutateTo, "latest mutation point, fraction of the run")
	fs.BoolVar(&s.SlowTools, "slow-tools", s.SlowTools, "inject slow tools")
	fs.Float64Var(&s.SlowShare, "slow-share", s.SlowShare, "share of calls that are slow")
	fs.Var((*secondsFlag)(&s.SlowMin), "slow-min", "shortest slow call, seconds")
	fs.Var((*secondsFlag)(&s.SlowMax), "slow-max", "longest slow call, seconds")
	fs.Var((*secondsFlag)(&s.ProgressMin), "progress-min", "shortest progress interval of slow calls, seconds")
	fs.Var((*secondsFlag)(&s.ProgressMax), "progress-max", "longest progress interval of slow calls, seconds")
	fs.BoolVar(&s.HotClient, "hot-client", s.HotClient, "inject a hot client")
	fs.Float64Var(&s.HotFactor, "hot-factor", s.HotFactor, "the hot client's extra rate, in multiples of a client's rate")
	fs.BoolVar(&s.Runaway, "runaway", s.Runaway, "inject a runaway agent: one client sending --runaway-rate more calls")
	fs.Float64Var(&s.RunawayRate, "runaway-rate", s.RunawayRate, "the runaway agent's extra calls per second")
	fs.BoolVar(&s.NewTool, "new-tool", s.NewTool, "inject a new tool that the rolling deploy adds (with --deploy): replicas serve it once back from their reboot")
	fs.Float64Var(&s.NewToolShare, "new-tool-share", s.NewToolShare, "share of calls that call the new tool once clients know of it")
	fs.StringVar(&s.Protocol, "protocol", s.Protocol, "2025-11-25-local, 2025-11-25-shared or 2026-07-28")
	fs.StringVar(&s.Routing, "routing", s.Routing, "round-robin, affinity or mcpfleet")
	fs.IntVar(&s.Replicas, "replicas", s.Replicas, "replicas, 1 to 12")
	fs.IntVar(&s.Slots, "slots", s.Slots, "execution slots per replica")
	fs.Var((*secondsFlag)(&s.IdleTimeout), "idle-timeout", "proxy idle timeout, seconds (0: none)")
	fs.Var((*secondsFlag)(&s.KeepAlive), "keep-alive", "SSE keep-alive interval, seconds (0: off)")
	fs.BoolVar(&s.Deploy, "deploy", s.Deploy, "inject a rolling deploy")
	fs.Var((*secondsFlag)(&s.DeployAt), "deploy-at", "when the rolling deploy starts, seconds")
	fs.Var((*secondsFlag)(&s.DrainWindow), "drain", "deploy drain window, seconds")
	fs.Var((*secondsFlag)(&s.RebootSeconds), "reboot", "reboot time after the kill, seconds")
	fs.BoolVar(&s.Idempotency, "idempotency", s.Idempotency, "mutating tools recognise re-executed calls")
	fs.IntVar(&s.MaxReissues, "max-reissues", s.MaxReissues, "times a client sends a call again before giving up")
	fs.Var((*secondsFlag)(&s.RoundTrip), "round-trip", "one exchange that runs no tool (re-initialize, reconnect), seconds")
	fs.Float64Var(&s.HashEpsilon, "mcpfleet-epsilon", s.HashEpsilon, "mcpfleet's bounded-load epsilon (0: no bound)")
	fs.IntVar(&s.HashMinLoad, "mcpfleet-min-load", s.HashMinLoad, "mcpfleet's floor under the bound (0: none)")
	fs.IntVar(&s.Gateways, "gateways", s.Gateways, "gateway replicas in front of the fleet, 1 to 12")
	fs.StringVar(&s.LimitStore, "limit-store", s.LimitStore, "local (each gateway its own limits) or shared (one store for all)")
	fs.Float64Var(&s.LimitRate, "limit-rate", s.LimitRate, "calls per second per caller (0: no rate limit)")
	fs.IntVar(&s.LimitBurst, "limit-burst", s.LimitBurst, "bucket size per caller (0: the rate rounded up)")
	fs.IntVar(&s.LimitConcurrency, "limit-concurrency", s.LimitConcurrency, "calls in flight per caller (0: no limit)")
	fs.IntVar(&s.MaxInflight, "max-inflight", s.MaxInflight, "each replica's calls in flight under mcpfleet routing, held per gateway (limit-store local) or fleet-wide (shared); 0: no cap")
	fs.Var((*secondsFlag)(&s.QueueTimeout), "queue-timeout", "how long a call that finds every replica at its max-inflight waits for a place before the 503, seconds (0: no queue)")
	fs.Var((*secondsFlag)(&s.ToolsRefresh), "tools-refresh", "how often each gateway lists every replica's tools under mcpfleet routing (tool-aware routing), seconds (0: off)")
}

// layeredScenario is the setup flags are parsed over: the defaults, then
// mission's broken setup (its reference answer when fixed; no mission for
// 0), then the JSON scenario in file ("" for none).
func layeredScenario(mission int, fixed bool, file string) (sim.Scenario, error) {
	base := sim.Default()
	if mission != 0 {
		m, err := sim.MissionByNumber(mission)
		if err != nil {
			return base, usageError{fmt.Errorf("--mission: %w", err)}
		}
		base = m.Broken
		if fixed {
			base = m.Reference
		}
	}
	if file != "" {
		if err := readScenario(file, &base); err != nil {
			return base, usageError{err}
		}
	}
	return base, nil
}

// readScenario decodes the JSON scenario in file over s; unknown keys are errors.
func readScenario(file string, s *sim.Scenario) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("--scenario: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(s); err != nil {
		return fmt.Errorf("--scenario %s: %w", file, err)
	}
	return nil
}

// writeMission prints a mission's goal and the stars earned.
func writeMission(w io.Writer, m *sim.Mission, st *sim.Stars) {
	met := 0
	for _, ok := range st.MetOn {
		if ok {
			met++
		}
	}
	fmt.Fprintf(w, "mission %d: %s\n", m.Number, m.Name)
	fmt.Fprintf(w, "  goal: %s\n  efficient: %s\n", m.Goal, m.Efficient)
	fmt.Fprintf(w, "  stars: %s (%d/3): goal on seed %d: %s; on the next %d seeds: %d met; efficient: %s\n\n",
		starString(st.Stars), st.Stars, m.Broken.Seed, yesNo(st.OnSeed), len(st.MetOn), met, yesNo(st.Efficient))
}

func starString(n int) string {
	return strings.Repeat("★", n) + strings.Repeat("☆", 3-n)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// sweepReport is the JSON of a sweep.
type sweepReport struct {
	Param   string        `json:"param"`
	Values  []string      `json:"values"`
	Mission *sim.Mission  `json:"mission,omitempty"`
	Stars   []*sim.Stars  `json:"stars,omitempty"`
	Results []*sim.Result `json:"results"`
}

// runSweep runs base once per value of --sweep, on several cores, showing
// progress on stderr, and prints the runs side by side.
func runSweep(ctx context.Context, meta simMeta, base sim.Scenario, mission *sim.Mission, stdout, stderr io.Writer) error {
	param, values, scs, err := sweepScenarios(meta.sweep, base)
	if err != nil {
		return usageError{err}
	}
	rep := sweepReport{Param: param, Values: values, Mission: mission, Results: make([]*sim.Result, len(scs))}
	if mission != nil {
		rep.Stars = make([]*sim.Stars, len(scs))
	}
	job := func(i int) {
		rep.Results[i] = sim.MustRun(scs[i]) // validated by sweepScenarios
		if mission != nil {
			st, _ := mission.Evaluate(scs[i])
			rep.Stars[i] = &st
		}
	}
	tty := simIsTTY(stderr)
	progress := func(done, total int) {
		if tty {
			fmt.Fprintf(stderr, "\rsim: %d/%d runs", done, total)
			if done == total {
				fmt.Fprintln(stderr)
			}
			return
		}
		fmt.Fprintf(stderr, "sim: %d/%d runs\n", done, total)
	}
	if err := sim.Parallel(ctx, len(scs), meta.workers, job, progress); err != nil {
		return err
	}
	if meta.json {
		return sim.WriteJSON(stdout, rep)
	}
	labels := make([]string, len(values))
	for i, v := range values {
		labels[i] = param + "=" + v
	}
	fmt.Fprintf(stdout, "%s\n\n", base.Describe())
	if mission != nil {
		fmt.Fprintf(stdout, "mission %d: %s\n  goal: %s\n  efficient: %s\n  stars:", mission.Number, mission.Name, mission.Goal, mission.Efficient)
		for i, st := range rep.Stars {
			fmt.Fprintf(stdout, "  %s %s", labels[i], starString(st.Stars))
		}
		fmt.Fprint(stdout, "\n\n")
	}
	return sim.WriteTable(stdout, labels, rep.Results)
}

// sweepScenarios reads PARAM=a,b,c and returns one validated scenario per
// value: base with the flag PARAM set to it.
func sweepScenarios(spec string, base sim.Scenario) (string, []string, []sim.Scenario, error) {
	param, list, ok := strings.Cut(spec, "=")
	if !ok || param == "" || list == "" {
		return "", nil, nil, fmt.Errorf("--sweep %q: want PARAM=a,b,c", spec)
	}
	values := strings.Split(list, ",")
	scs := make([]sim.Scenario, len(values))
	for i, v := range values {
		scs[i] = base
		fs := flag.NewFlagSet("sweep", flag.ContinueOnError)
		defineScenarioFlags(fs, &scs[i])
		if fs.Lookup(param) == nil {
			return "", nil, nil, fmt.Errorf("--sweep: %q is not a setting (see mcpfleet sim -h)", param)
		}
		if err := fs.Set(param, strings.TrimSpace(v)); err != nil {
			return "", nil, nil, fmt.Errorf("--sweep %s=%s: %w", param, v, err)
		}
		if err := scs[i].Validate(); err != nil {
			return "", nil, nil, fmt.Errorf("--sweep %s=%s: %w", param, v, err)
		}
	}
	return param, values, scs, nil
}

// simIsTTY reports whether w is a terminal, for a progress line rewritten in place.
func simIsTTY(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// secondsFlag is a flag of seconds that also takes a Go duration: "30" and
// "30s" are the same.
type secondsFlag float64

func (f *secondsFlag) String() string { return strconv.FormatFloat(float64(*f), 'g', -1, 64) }

func (f *secondsFlag) Set(v string) error {
	if d, err := time.ParseDuration(v); err == nil {
		*f = secondsFlag(d.Seconds())
		return nil
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return fmt.Errorf("want seconds (30) or a duration (30s, 2m)")
	}
	*f = secondsFlag(x)
	return nil
}

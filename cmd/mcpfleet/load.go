package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/mcpfleet/mcpfleet/internal/bottleneck"
	"github.com/mcpfleet/mcpfleet/internal/load"
	"github.com/mcpfleet/mcpfleet/internal/proc"
	"github.com/mcpfleet/mcpfleet/internal/sim"
)

// loadMeta are the load command's flags that are not scenario settings.
type loadMeta struct {
	scenario  string
	mission   int
	fixed     bool
	json      bool
	url       string
	fleet     int
	speed     float64
	burn      int
	cores     int
	pids      string
	match     string
	quiet     bool
	calibrate string
	missions  []int // --calibrate's, none for all
}

// runLoad runs the load command (its help: helptext.go).
func runLoad(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	meta, s, err := parseLoadFlags(args)
	if err != nil {
		return err
	}
	o := load.Options{Scenario: s, Speed: meta.speed, URL: meta.url, Fleet: meta.fleet > 0,
		ReplicaCores: meta.cores, Burn: meta.burn}
	if o.Fleet {
		if err := findLoadPrograms(&o); err != nil {
			return usageError{err}
		}
	}
	if o.Watch, err = watched(meta.pids, meta.match); err != nil {
		return usageError{err}
	}
	if err := o.Validate(); err != nil {
		return usageError{err}
	}
	level := slog.LevelInfo
	if os.Getenv("MCPFLEET_LOAD_DEBUG") != "" {
		level = slog.LevelDebug
	}
	if meta.quiet {
		level = slog.LevelError
	} else {
		o.Progress = stderr
	}
	o.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	if meta.calibrate != "" {
		return runCalibration(ctx, o, meta, stdout, stderr)
	}
	var mission *sim.Mission
	if meta.mission > 0 {
		m, _ := sim.MissionByNumber(meta.mission) // checked while parsing
		mission = &m
	}
	rep, err := load.Run(ctx, &o)
	if err != nil {
		return err
	}
	predicted, err := sim.Run(s)
	if err != nil {
		return err
	}
	if meta.json {
		if mission == nil {
			return sim.WriteJSON(stdout, rep)
		}
		met := mission.GoalMet(rep.Result)
		return sim.WriteJSON(stdout, loadMission{Mission: mission.Number, GoalMet: &met, Result: rep})
	}
	return load.WriteComparison(stdout, rep, predicted, mission)
}

// runCalibration runs --calibrate: each mission's broken and fixed setups
// both ways, the table to stdout (or the runs as JSON), progress to stderr.
func runCalibration(ctx context.Context, o load.Options, meta loadMeta, stdout, stderr io.Writer) error {
	var progress io.Writer
	if !meta.quiet {
		progress = stderr
	}
	o.Progress = nil // one line per run is enough
	cs, err := load.Calibrate(ctx, o, meta.missions, progress)
	if err != nil {
		return err
	}
	if meta.json {
		return sim.WriteJSON(stdout, cs)
	}
	return load.WriteCalibration(stdout, cs)
}

// loadMission is the JSON of a mission's real run.
type loadMission struct {
	Mission int          `json:"mission"`
	GoalMet *bool        `json:"goal_met"`
	Result  *load.Report `json:"result"`
}

// parseLoadFlags parses args twice, as parseSimFlags does, so that the
// flags given win over the mission and the scenario file.
func parseLoadFlags(args []string) (loadMeta, sim.Scenario, error) {
	var meta loadMeta
	scratch := sim.Default()
	fs := newLoadFlagSet(&meta, &scratch)
	if err := parseFlags(fs, args); err != nil {
		return meta, scratch, err
	}
	if meta.fixed && meta.mission == 0 {
		return meta, scratch, usageError{errors.New("--fixed: goes with --mission N")}
	}
	base, err := layeredScenario(meta.mission, meta.fixed, meta.scenario)
	if err != nil {
		return meta, base, err
	}
	var again loadMeta
	fs = newLoadFlagSet(&again, &base)
	if err := parseFlags(fs, args); err != nil {
		return meta, base, err
	}
	if (meta.url == "") == (meta.fleet == 0) {
		return meta, base, usageError{errors.New("give --url URL (an endpoint on loopback) or --fleet N (start N replicas)")}
	}
	if meta.fleet < 0 || meta.fleet > sim.MaxReplicas {
		return meta, base, usageError{fmt.Errorf("--fleet: 1 to %d replicas, got %d", sim.MaxReplicas, meta.fleet)}
	}
	if meta.calibrate != "" && meta.calibrate != "all" {
		for _, f := range strings.Split(meta.calibrate, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if _, merr := sim.MissionByNumber(n); err != nil || merr != nil {
				return meta, base, usageError{fmt.Errorf("--calibrate: want all or mission numbers 1 to %d, got %q", len(sim.Missions()), f)}
			}
			meta.missions = append(meta.missions, n)
		}
	}
	if meta.calibrate != "" && (meta.fleet == 0 || meta.mission != 0) {
		return meta, base, usageError{errors.New("--calibrate: goes with --fleet and without --mission (it runs every mission's setups, each with its own replicas)")}
	}
	if meta.fleet > 0 {
		base.Replicas = meta.fleet
	}
	if err := base.Validate(); err != nil {
		return meta, base, usageError{err}
	}
	return meta, base, nil
}

func newLoadFlagSet(meta *loadMeta, s *sim.Scenario) *flag.FlagSet {
	fs := newFlagSet("load")
	fs.StringVar(&meta.url, "url", "", "the MCP endpoint `URL` to load, on loopback, e.g. http://127.0.0.1:8080/mcp")
	fs.IntVar(&meta.fleet, "fleet", 0, "start a local fleet of `N` testserver replicas (sets --replicas) and its front")
	fs.Float64Var(&meta.speed, "speed", 20, "time compression: model seconds per real second, 1 to 100")
	fs.StringVar(&meta.scenario, "scenario", "", "read settings from the JSON `file` (the keys of sim --json's scenario)")
	fs.IntVar(&meta.mission, "mission", 0, fmt.Sprintf("load mission `N`'s broken setup (1 to %d) and say whether the real run meets its goal", len(sim.Missions())))
	fs.BoolVar(&meta.fixed, "fixed", false, "with --mission: its reference answer instead of the broken setup")
	fs.BoolVar(&meta.json, "json", false, "print the run as JSON, in the schema of sim --json, with a run member")
	fs.IntVar(&meta.burn, "burn", 0, "every call is the CPU-heavy tool burn of `MS` milliseconds of CPU")
	fs.IntVar(&meta.cores, "replica-cores", 1, "GOMAXPROCS of each replica process (1: a single-threaded server)")
	fs.StringVar(&meta.pids, "pids", "", "more processes to sample, `name=pid,...` (role other), e.g. api=1234")
	fs.StringVar(&meta.match, "match", "", "sample every process whose command line contains `text`")
	fs.BoolVar(&meta.quiet, "q", false, "no progress on stderr")
	fs.StringVar(&meta.calibrate, "calibrate", "", "with --fleet: run the `missions` 1,3,... (or all) broken and fixed, in the simulator and for real, and print the Markdown table of docs/SIM.md")
	defineScenarioFlags(fs, s)
	return fs
}

// findLoadPrograms fills in what a fleet runs: this very binary (its
// testserver and serve commands), and haproxy and redis-server when the
// scenario needs them.
func findLoadPrograms(o *load.Options) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("--fleet runs this binary's testserver and serve commands: %w", err)
	}
	o.Binary = self
	s := &o.Scenario
	if s.Routing != sim.Fleet || s.Gateways > 1 {
		if o.HAProxy, err = proc.Lookup("haproxy", "haproxy"); err != nil {
			return fmt.Errorf("--fleet with routing %s and %d gateways: %w", s.Routing, s.Gateways, err)
		}
	}
	if s.Routing == sim.Fleet && (s.Gateways > 1 || s.LimitStore == sim.SharedLimits) {
		if o.RedisServer, err = proc.Lookup("redis-server", "redis-server"); err != nil {
			return fmt.Errorf("--fleet with %d gateways and limit store %s: %w", s.Gateways, s.LimitStore, err)
		}
	}
	return nil
}

// watched parses --pids (name=pid,...) and --match.
func watched(pids, match string) ([]bottleneck.Target, error) {
	var out []bottleneck.Target
	for _, f := range strings.Split(pids, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		name, v, ok := strings.Cut(f, "=")
		if !ok {
			name, v = "pid-"+f, f
		}
		pid, err := strconv.Atoi(v)
		if err != nil || pid <= 0 {
			return nil, fmt.Errorf("--pids: want name=pid, got %q", f)
		}
		out = append(out, bottleneck.Target{Name: name, Role: bottleneck.RoleOther, PID: pid})
	}
	if match != "" {
		ms, err := load.Match(match)
		if err != nil {
			return nil, fmt.Errorf("--match: %w", err)
		}
		if len(ms) == 0 {
			return nil, fmt.Errorf("--match: no running process's command line contains %q", match)
		}
		out = append(out, ms...)
	}
	return out, nil
}

package sim

import (
	"bytes"
	"testing"
)

// scenarios returns a spread of settings that exercise every path: each
// protocol and routing, and every injection.
func scenarios() map[string]Scenario {
	all := Default()
	all.SlowTools, all.HotClient, all.Deploy = true, true, true
	out := map[string]Scenario{"default": Default(), "everything": all}
	for _, store := range []string{LocalLimits, SharedLimits} {
		s := all
		s.Protocol, s.Routing, s.Runaway, s.Gateways, s.LimitStore = Local2025, Fleet, true, 3, store
		s.LimitRate, s.LimitBurst, s.LimitConcurrency = 2, 3, 4
		out["limits/"+store] = s
	}
	for _, p := range []string{Local2025, Shared2025, Rev2026} {
		for _, r := range []string{RoundRobin, Affinity, Fleet} {
			s := all
			s.Protocol, s.Routing, s.IdleTimeout, s.DrainWindow = p, r, 40, 10
			out[p+"/"+r] = s
		}
	}
	for _, r := range []string{RoundRobin, Fleet} {
		s := all
		s.Protocol, s.Routing, s.NewTool, s.Gateways = Rev2026, r, true, 2
		out["new tool/"+r] = s
	}
	return out
}

func encode(t *testing.T, r *Result) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestSameSeedSameBytes(t *testing.T) {
	for name, s := range scenarios() {
		t.Run(name, func(t *testing.T) {
			a, b := encode(t, MustRun(s)), encode(t, MustRun(s))
			if !bytes.Equal(a, b) {
				t.Fatalf("two runs of the same scenario differ:\n%s\n---\n%s", a, b)
			}
			s.Seed++
			if c := encode(t, MustRun(s)); bytes.Equal(a, c) {
				t.Fatal("a different seed gave the same bytes")
			}
		})
	}
}

func TestResultAccounting(t *testing.T) {
	for name, s := range scenarios() {
		t.Run(name, func(t *testing.T) {
			r := MustRun(s)
			if r.Completed+r.Failed != r.Issued {
				t.Errorf("completed %d + failed %d != issued %d", r.Completed, r.Failed, r.Issued)
			}
			if r.P50 > r.P95 || r.P95 > r.P99 {
				t.Errorf("percentiles out of order: %v %v %v", r.P50, r.P95, r.P99)
			}
			n := len(r.Timeline.Cuts)
			if n < int(s.TrafficSeconds) || len(r.Timeline.InFlight) != s.Replicas || len(r.Timeline.InFlight[0]) != n {
				t.Fatalf("timeline: %d seconds, %d replicas", n, len(r.Timeline.InFlight))
			}
			sums := []struct {
				name   string
				series []int32
				want   int
			}{
				{"cuts", r.Timeline.Cuts, r.IdleCuts},
				{"404s", r.Timeline.NotFound, r.NotFound},
				{"failures", r.Timeline.Failures, r.Failed},
				{"duplicate mutations", r.Timeline.DuplicateMutations, r.DuplicateMutations},
				{"killed", r.Timeline.Killed, r.Killed},
				{"refused", r.Timeline.Refused, r.Refused},
			}
			for _, c := range sums {
				got := 0
				for _, v := range c.series {
					got += int(v)
				}
				if got != c.want {
					t.Errorf("timeline %s sum %d, figure %d", c.name, got, c.want)
				}
			}
		})
	}
}

func TestValidateNamesTheField(t *testing.T) {
	tests := []struct {
		field string
		set   func(*Scenario)
	}{
		{"protocol", func(s *Scenario) { s.Protocol = "2024" }},
		{"routing", func(s *Scenario) { s.Routing = "random" }},
		{"replicas", func(s *Scenario) { s.Replicas = 13 }},
		{"replicas", func(s *Scenario) { s.Replicas = 0 }},
		{"arrival_rate", func(s *Scenario) { s.ArrivalRate = 0 }},
		{"duration_sigma", func(s *Scenario) { s.DurationSigma = -1 }},
		{"mutate_to", func(s *Scenario) { s.MutateFrom, s.MutateTo = 0.5, 0.4 }},
		{"slow_max_s", func(s *Scenario) { s.SlowMax = 10 }},
		{"keep_alive_s", func(s *Scenario) { s.KeepAlive = -1 }},
		{"traffic_s", func(s *Scenario) { s.TrafficSeconds = 1e7 }},
		{"gateways", func(s *Scenario) { s.Gateways = 0 }},
		{"gateways", func(s *Scenario) { s.Gateways = MaxGateways + 1 }},
		{"limit_store", func(s *Scenario) { s.LimitStore = "redis" }},
		{"limit_rate", func(s *Scenario) { s.LimitRate = -1 }},
		{"limit_burst", func(s *Scenario) { s.LimitBurst = -1 }},
		{"limit_concurrency", func(s *Scenario) { s.LimitConcurrency = -1 }},
		{"runaway_rate", func(s *Scenario) { s.RunawayRate = -1 }},
		{"new_tool_share", func(s *Scenario) { s.NewToolShare = 1.5 }},
		{"tools_refresh_s", func(s *Scenario) { s.ToolsRefresh = 0.5 }},
		{"tools_refresh_s", func(s *Scenario) { s.ToolsRefresh = 86401 }},
	}
	for _, tt := range tests {
		s := Default()
		tt.set(&s)
		err := s.Validate()
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(tt.field)) {
			t.Errorf("%s: Validate() = %v, want an error naming it", tt.field, err)
		}
		if _, err := Run(s); err == nil {
			t.Errorf("%s: Run accepted an invalid scenario", tt.field)
		}
	}
	if s := Default(); s.Validate() != nil {
		t.Errorf("Default() is invalid: %v", s.Validate())
	}
}

func TestEdgeSettingsResolveEveryCall(t *testing.T) {
	edges := []func(*Scenario){
		func(s *Scenario) { s.Replicas = 1 },
		func(s *Scenario) { s.Replicas = MaxReplicas },
		func(s *Scenario) { s.Slots = 1 },
		func(s *Scenario) { s.IdleTimeout = 0 },
		func(s *Scenario) { s.IdleTimeout, s.KeepAlive = 5, 10 },
		func(s *Scenario) { s.DurationSigma, s.DrainWindow, s.RebootSeconds = 0, 0, 0 },
		func(s *Scenario) { s.MaxReissues, s.RoundTrip = 0, 0 },
		func(s *Scenario) { s.HashEpsilon, s.HashMinLoad = 0, 0 },
		func(s *Scenario) {
			s.Runaway, s.Gateways, s.LimitRate, s.LimitConcurrency, s.MaxReissues = true, MaxGateways, 1, 1, 0
		},
		func(s *Scenario) { s.NewTool, s.NewToolShare, s.Gateways, s.MaxInflight = true, 1, 3, 4 },
		func(s *Scenario) { s.NewTool, s.NewToolShare, s.ToolsRefresh, s.RebootSeconds = true, 1, 1, 0 },
	}
	for i, edge := range edges {
		for name, s := range grid(stormy()) {
			s.TrafficSeconds = 300
			edge(&s)
			r, err := Run(s)
			if err != nil {
				t.Fatalf("edge %d %s: %v", i, name, err)
			}
			if r.Completed+r.Failed != r.Issued {
				t.Errorf("edge %d %s: completed %d + failed %d != issued %d", i, name, r.Completed, r.Failed, r.Issued)
			}
		}
	}
}

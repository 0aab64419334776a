package sim

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcpfleet/internal/limit"
	"github.com/mcpfleet/mcpfleet/internal/tools"
)

// withoutNewTool returns calls with their new-tool marks cleared.
func withoutNewTool(calls []Call) []Call {
	out := make([]Call, len(calls))
	for i, c := range calls {
		c.NewTool = false
		out[i] = c
	}
	return out
}

// TestNewToolKeepsTheBaseTraffic: the new tool's draws come from a stream
// of their own, so turning it on changes no other draw, and neither the
// hot client nor the runaway agent shifts which calls call it.
func TestNewToolKeepsTheBaseTraffic(t *testing.T) {
	base := Default()
	plain := Traffic(&base)
	s := base
	s.NewTool = true
	marked := Traffic(&s)
	if diff := cmp.Diff(plain, withoutNewTool(marked)); diff != "" {
		t.Fatalf("the new tool changed the calls:\n%.2000s", diff)
	}
	n := 0
	for _, c := range marked {
		if c.NewTool {
			n++
		}
	}
	if want := s.NewToolShare * float64(len(marked)); float64(n) < 0.9*want || float64(n) > 1.1*want {
		t.Errorf("%d of %d calls call the new tool, want about %.0f", n, len(marked), want)
	}

	busy := s
	busy.HotClient, busy.Runaway = true, true
	var rest []Call
	for _, c := range Traffic(&busy) {
		if !c.Hot && !c.Runaway {
			rest = append(rest, c)
		}
	}
	if diff := cmp.Diff(marked, rest); diff != "" {
		t.Errorf("the hot client and the runaway agent moved the new tool's calls:\n%.2000s", diff)
	}

	none := s
	none.NewToolShare = 0
	if diff := cmp.Diff(plain, Traffic(&none)); diff != "" {
		t.Errorf("a share of 0 marked calls:\n%.2000s", diff)
	}
}

// sameFigures reports whether two runs have the same figures, their
// scenarios aside.
func sameFigures(t *testing.T, a, b *Result) bool {
	t.Helper()
	x, y := *a, *b
	y.Scenario = x.Scenario
	return bytes.Equal(encode(t, &x), encode(t, &y))
}

// TestNewToolWithoutEffect: without a deploy no replica serves the new
// tool and no call calls it; without the injection tools_refresh_s
// changes nothing.
func TestNewToolWithoutEffect(t *testing.T) {
	for name, s := range grid(stormy()) {
		t.Run(name, func(t *testing.T) {
			s.TrafficSeconds = 300
			ref := MustRun(s)
			off := s
			off.ToolsRefresh = 0
			if !sameFigures(t, ref, MustRun(off)) {
				t.Error("tools_refresh_s changed a run without the new tool")
			}
			nodeploy := s
			nodeploy.Deploy = false
			tool := nodeploy
			tool.NewTool, tool.NewToolShare = true, 1
			r := MustRun(tool)
			if r.UnknownTool != 0 || !sameFigures(t, MustRun(nodeploy), r) {
				t.Errorf("the new tool without a deploy: %d unknown tool, or other figures changed", r.UnknownTool)
			}
		})
	}
}

// TestToolAwareRoutingNeverSendsTheToolWhereItIsNot: with the new tool on
// every call, mcpfleet's tool filter never sends it to a replica without
// it, whatever the protocol where routing can choose (sessions pinned to
// their replica, 2025-11-25 local, stay there) and the gateways; with the
// watcher off, or with round-robin, calls fail with unknown tool.
func TestToolAwareRoutingNeverSendsTheToolWhereItIsNot(t *testing.T) {
	for _, gateways := range []int{1, 3} {
		for name, s := range grid(stormy()) {
			s.NewTool, s.NewToolShare, s.Gateways = true, 1, gateways
			t.Run(name, func(t *testing.T) {
				r := MustRun(s)
				if r.Completed+r.Failed != r.Issued || r.Failed < r.UnknownTool {
					t.Fatalf("completed %d + failed %d != issued %d, or %d unknown tool over the failed", r.Completed, r.Failed, r.Issued, r.UnknownTool)
				}
				switch {
				case s.Routing != Fleet:
					if r.UnknownTool == 0 {
						t.Errorf("%s sent no call of the new tool to an old replica", s.Routing)
					}
				case s.Protocol == Local2025:
					if r.UnknownTool == 0 {
						t.Error("sessions pinned to old replicas got no unknown tool: nothing was pinned")
					}
				default:
					if r.UnknownTool != 0 {
						t.Errorf("tool-aware routing: %d calls failed with unknown tool", r.UnknownTool)
					}
					off := s
					off.ToolsRefresh = 0
					if n := MustRun(off).UnknownTool; n == 0 {
						t.Error("with the watcher off no call failed with unknown tool: the check above proves nothing")
					}
				}
			})
		}
	}
}

// TestToolAwareRoutingIsDeclares: the engine's tool filter is
// tools.Declares, the gateway's routing rule: watched, it is called for
// calls of the new tool under mcpfleet and the run is the same; replaced
// by a rule that allows every replica, the calls fail again; round-robin
// never asks it.
func TestToolAwareRoutingIsDeclares(t *testing.T) {
	m, err := MissionByNumber(8)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { toolRule = tools.Declares }()
	want := MustRun(m.Reference)
	calls, filtered := 0, 0
	toolRule = func(n int, tool string, eligible func(int) bool, has func(int, string) bool) func(int) bool {
		calls++
		if tool != newToolName {
			t.Errorf("the filter was asked about tool %q", tool)
		}
		ok := tools.Declares(n, tool, eligible, has)
		for i := range n {
			if !ok(i) {
				filtered++
				break
			}
		}
		return ok
	}
	if got := MustRun(m.Reference); !bytes.Equal(encode(t, got), encode(t, want)) {
		t.Error("the watched rule changed the run")
	}
	if calls == 0 || filtered == 0 {
		t.Errorf("tools.Declares was called %d times, %d of them restricting the pick; want both above 0", calls, filtered)
	}
	if want.UnknownTool != 0 {
		t.Fatalf("the reference answer has %d unknown tool", want.UnknownTool)
	}

	toolRule = func(int, string, func(int) bool, func(int, string) bool) func(int) bool {
		return func(int) bool { return true }
	}
	if r := MustRun(m.Reference); r.UnknownTool == 0 {
		t.Error("with a rule that filters nothing, mcpfleet still sent no call of the new tool to an old replica")
	}

	calls = 0
	toolRule = func(n int, tool string, eligible func(int) bool, has func(int, string) bool) func(int) bool {
		calls++
		return tools.Declares(n, tool, eligible, has)
	}
	MustRun(m.Broken)
	if calls != 0 {
		t.Errorf("round-robin asked the tool filter %d times", calls)
	}
}

// TestHalfFinishedDeployMission holds mission 8's figures and the stars of
// the answers around its reference: mcpfleet's tool filter is the fix;
// the same routing without it (the watcher off), affinity, sessions
// pinned in their replica and shrinking the fleet are not.
func TestHalfFinishedDeployMission(t *testing.T) {
	m, err := MissionByNumber(8)
	if err != nil {
		t.Fatal(err)
	}
	broken := MustRun(m.Broken)
	if broken.UnknownTool == 0 || broken.Failed != broken.UnknownTool || broken.Killed != 0 {
		t.Errorf("broken: %d unknown tool, %d failed, %d killed; want every failure an unknown tool and no kill", broken.UnknownTool, broken.Failed, broken.Killed)
	}
	if ref := MustRun(m.Reference); ref.UnknownTool != 0 || ref.Failed != 0 {
		t.Errorf("reference: %d unknown tool, %d failed", ref.UnknownTool, ref.Failed)
	}
	tests := []struct {
		name  string
		set   func(*Scenario)
		stars int
	}{
		{"mcpfleet routing", func(s *Scenario) { s.Routing = Fleet }, 3},
		{"mcpfleet with the shared session store", func(s *Scenario) { s.Routing, s.Protocol = Fleet, Shared2025 }, 3},
		{"mcpfleet behind three gateways", func(s *Scenario) { s.Routing, s.Gateways = Fleet, 3 }, 3},
		{"mcpfleet without the tool watcher", func(s *Scenario) { s.Routing, s.ToolsRefresh = Fleet, 0 }, 0},
		{"affinity", func(s *Scenario) { s.Routing = Affinity }, 0},
		{"mcpfleet with sessions pinned in their replica", func(s *Scenario) { s.Routing, s.Protocol = Fleet, Local2025 }, 0},
		{"a shorter drain", func(s *Scenario) { s.DrainWindow = 0 }, 0},
		{"two replicas: never mixed, but out of the goal", func(s *Scenario) { s.Replicas = 2 }, 0},
		{"the new tool turned off is no answer", func(s *Scenario) { s.NewTool = false }, 0},
		{"the new tool called less is no answer", func(s *Scenario) { s.NewToolShare = 0.1 }, 0},
		{"a deploy that ends after the traffic is no answer", func(s *Scenario) { s.DeployAt = 500 }, 0},
		{"mcpfleet with a fourth replica", func(s *Scenario) { s.Routing, s.Replicas = Fleet, 4 }, 2},
		{"mcpfleet with a longer drain", func(s *Scenario) { s.Routing, s.DrainWindow = Fleet, 40 }, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := m.Broken
			tt.set(&s)
			st, err := m.Evaluate(s)
			if err != nil {
				t.Fatal(err)
			}
			if st.Stars != tt.stars {
				t.Errorf("%d stars (%+v), want %d", st.Stars, st, tt.stars)
			}
		})
	}
}

// TestUnknownToolGivesItsPlaceBack: a call answered unknown tool gives
// back the place it took at its replica (max_inflight): after a run of
// sessions pinned to old replicas, every replica has all its places free.
func TestUnknownToolGivesItsPlaceBack(t *testing.T) {
	m, err := MissionByNumber(8)
	if err != nil {
		t.Fatal(err)
	}
	s := m.Broken
	s.Protocol, s.Routing, s.MaxInflight, s.QueueTimeout, s.Gateways = Local2025, Fleet, 3, 30, 2
	e := newEngine(&s, Traffic(&s))
	e.drive()
	if e.res.UnknownTool == 0 {
		t.Fatal("no call failed with unknown tool: the check below proves nothing")
	}
	for g := range e.gws {
		for r := range e.reps {
			var ids []limit.LeaseID
			for k := range s.MaxInflight {
				id, ok := e.reserve(g, r)
				if !ok {
					t.Fatalf("gateway %d finds replica %d's place %d taken after the run", g, r, k+1)
				}
				ids = append(ids, id)
			}
			for _, id := range ids {
				e.releasePlace(g, r, id)
			}
		}
	}
}

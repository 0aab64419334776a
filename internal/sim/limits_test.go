package sim

import (
	"fmt"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/limit"
)

// runawayFleet is a fleet with a runaway agent and a rate limit only.
func runawayFleet() Scenario {
	s := Default()
	s.Protocol, s.Routing, s.TrafficSeconds = Rev2026, Fleet, 300
	s.Runaway, s.RunawayRate = true, 20
	s.LimitRate, s.LimitBurst = 2, 4
	return s
}

func TestLimitsAcrossGateways(t *testing.T) {
	for _, store := range []string{LocalLimits, SharedLimits} {
		for g := 1; g <= 4; g++ {
			for name, s := range grid(runawayFleet()) {
				s.Gateways, s.LimitStore = g, store
				t.Run(fmt.Sprintf("%s/%d/%s", store, g, name), func(t *testing.T) {
					r := MustRun(s)
					want := s.LimitRate // one budget per caller
					if store == LocalLimits {
						want *= float64(g) // one per caller per gateway
					}
					if !within(r.RunawayAdmittedRate, want, 0.05) {
						t.Errorf("runaway agent admitted at %.3f/s, want about %.3f/s", r.RunawayAdmittedRate, want)
					}
					if r.Refused == 0 || r.RunawayClient < 0 {
						t.Errorf("%d refusals, runaway client %d", r.Refused, r.RunawayClient)
					}
					if r.Completed+r.Failed != r.Issued {
						t.Errorf("completed %d + failed %d != issued %d", r.Completed, r.Failed, r.Issued)
					}
				})
			}
		}
	}
}

func TestNoLimitsAdmitEverything(t *testing.T) {
	s := runawayFleet()
	s.LimitRate, s.Replicas = 0, 8 // room for the agent: nothing is cut or re-sent
	r := MustRun(s)
	if r.Refused != 0 {
		t.Errorf("%d refusals without limits", r.Refused)
	}
	if !within(r.RunawayAdmittedRate, s.RunawayRate+s.ArrivalRate/float64(s.Clients), 0.05) {
		t.Errorf("runaway agent admitted at %.3f/s without limits, want about its %.3f/s", r.RunawayAdmittedRate, s.RunawayRate)
	}
}

// TestLeasesEndWithTheirExecutions runs fleets under a concurrency limit,
// every way an execution can end (done, killed by a deploy, cancelled by a
// cut) and a call can fail at its replica (unknown tool), and checks that
// no caller holds a lease at the end: a call of each would be admitted
// under a limit of one.
func TestLeasesEndWithTheirExecutions(t *testing.T) {
	base := stormy()
	base.TrafficSeconds = 300
	base.Runaway, base.RunawayRate = true, 5
	base.LimitConcurrency, base.Gateways = 3, 3
	base.NewTool = true
	for _, store := range []string{LocalLimits, SharedLimits} {
		for name, s := range grid(base) {
			s.LimitStore = store
			t.Run(store+"/"+name, func(t *testing.T) {
				e := newEngine(&s, Traffic(&s))
				e.drive()
				if e.res.Refused == 0 {
					t.Fatal("the concurrency limit refused nothing")
				}
				one := limit.Check{Concurrency: 1, LeaseTTL: heldTTL}
				for g := range e.gws {
					for c, caller := range e.lim.callers {
						d, id := e.table(g).Acquire(caller, "", one, epoch.Add(e.now))
						if !d.Allowed {
							t.Fatalf("client %d still holds a lease at gateway %d's table after the run", c, g)
						}
						e.table(g).Release(caller, "", id)
					}
				}
			})
		}
	}
}

func TestRefusalsCountAgainstMaxReissues(t *testing.T) {
	s := runawayFleet()
	s.MaxReissues = 0
	r := MustRun(s)
	if r.Failed < r.Refused {
		t.Errorf("with no re-issues allowed, %d refusals gave only %d failed calls", r.Refused, r.Failed)
	}
	if r.RefusedOthers != 0 {
		t.Errorf("clients at their normal rate got %d 429s", r.RefusedOthers)
	}
}

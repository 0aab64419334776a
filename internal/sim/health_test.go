package sim

import (
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/balance"
	"github.com/mcpfleet/mcpfleet/internal/health"
)

// healthEngine is an engine over the default fleet under mcpfleet routing,
// with no traffic run.
func healthEngine(t *testing.T) *engine {
	t.Helper()
	s := Default()
	s.Routing, s.Deploy = Fleet, true
	return newEngine(&s, nil)
}

func TestRebootingReplicaIsEjectedAfterFallConnects(t *testing.T) {
	e := healthEngine(t)
	e.reps[1].down = true
	for k := 1; k <= health.DefaultFall; k++ {
		if got := e.gws[0].seen[1].State; got != health.StateUp {
			t.Fatalf("after %d failed connects the replica is %v, want up", k-1, got)
		}
		if o, ok := e.attempt(0, 1, true); ok || o != balance.NotDelivered {
			t.Fatalf("attempt at a rebooting replica = %v, %v; want not delivered", o, ok)
		}
	}
	if got := e.gws[0].seen[1].State; got != health.StateDown {
		t.Fatalf("after %d failed connects the replica is %v, want down", health.DefaultFall, got)
	}
	if e.gws[0].view.Eligible(1) {
		t.Error("a replica seen down is still eligible")
	}
	e.reps[1].down = false
	for k := 1; k <= health.DefaultRise; k++ {
		if e.gws[0].view.Eligible(1) {
			t.Fatalf("eligible after %d ok checks, rise is %d", k-1, health.DefaultRise)
		}
		e.check()
	}
	if !e.gws[0].view.Eligible(1) {
		t.Errorf("not eligible after %d ok checks", health.DefaultRise)
	}
}

func TestDrainingReplicaIsSeenAtOnce(t *testing.T) {
	e := healthEngine(t)
	e.reps[0].draining = true
	if _, ok := e.attempt(0, 0, false); !ok {
		t.Fatal("a draining replica refused a resume, which is not new work")
	}
	if !e.gws[0].view.Eligible(0) {
		t.Fatal("a resume served by a draining replica took it out")
	}
	if o, ok := e.attempt(0, 0, true); ok || o != balance.RefusedDraining {
		t.Fatalf("new work at a draining replica = %v, %v; want refused draining", o, ok)
	}
	if got := e.gws[0].seen[0].State; got != health.StateDraining {
		t.Errorf("after one draining answer the replica is %v, want draining", got)
	}
}

func TestSuccessBreaksAFailureStreak(t *testing.T) {
	e := healthEngine(t)
	e.reps[2].down = true
	e.attempt(0, 2, true)
	e.reps[2].down = false
	e.attempt(0, 2, true)
	e.reps[2].down = true
	e.attempt(0, 2, true)
	if got := e.gws[0].seen[2].State; got != health.StateUp {
		t.Errorf("two failed connects with a success between took the replica %v, want up", got)
	}
}

func TestPickMovesOnFromAnUnseenDrain(t *testing.T) {
	e := healthEngine(t)
	e.reps[0].draining = true
	for c := range 24 {
		if r := e.pickFleet(c, 0, true); r <= 0 {
			t.Fatalf("client %d went to replica %d, want one not draining", c, r)
		}
	}
	if e.res.Undelivered != 1 {
		t.Errorf("%d requests refused as draining, want 1: then the gateway has seen the drain", e.res.Undelivered)
	}
	// Two drains nobody has seen yet in one request's path exhaust the
	// default retry: the gateway answers 502, as it would.
	e = healthEngine(t)
	e.reps[0].draining, e.reps[1].draining = true, true
	failed := 0
	for c := range 24 {
		if e.pickFleet(c, 0, true) < 0 {
			failed++
		}
	}
	if failed > 1 {
		t.Errorf("%d requests found no replica; at most the first may", failed)
	}
}

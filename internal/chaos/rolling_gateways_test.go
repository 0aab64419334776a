package chaos

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfleet/mcpfleet/internal/store/redistest"
	"github.com/mcpfleet/mcpfleet/internal/testproc"
)

// TestRollingGatewaysLoseNothing: a rolling restart of the gateways themselves:
// three gateway processes sharing a secret file and a real redis-server,
// behind a real HAProxy checking their /readyz, restarted one by one under
// load (SIGTERM, a drain delay longer than HAProxy's detection, restart).
// No call fails, no mutation runs twice, and in the 2025 era every session
// is kept: its sealed ID opens in whichever gateway HAProxy picks.
func TestRollingGatewaysLoseNothing(t *testing.T) {
	haproxy := testproc.FindBinary(t, "haproxy", "haproxy", "MCPFLEET_REQUIRE_BALANCERS")
	redis := testproc.FindBinary(t, "redis-server", "redis-server", redistest.RequireEnv)
	bin := testproc.BuildMcpfleet(t)
	for _, era := range []string{Era2025, Era2026} {
		t.Run(era, func(t *testing.T) {
			t.Parallel()
			o := &Options{
				Roll: RollGateways, Gateways: 3, Binary: bin, HAProxy: haproxy, RedisServer: redis,
				Era: era, Replicas: 3, Duration: 8 * time.Second, Rate: 30, Cap: 3 * time.Second,
				Grace: 5 * time.Second, Downtime: 300 * time.Millisecond, IdempotencyKeys: true, Seed: 7,
			}
			r := runChaos(t, o)
			defer evidence(t, r)
			checkNothingLost(t, r)
			checkRolledUnderLoad(t, r, 3*time.Second) // the default drain delay
		})
	}
}

// checkNothingLost asserts what the clients and the ledger saw.
func checkNothingLost(t *testing.T, r *Report) {
	t.Helper()
	if r.Failed != 0 || r.Completed != r.Calls {
		t.Errorf("%d of %d calls completed, %d failed; want all, none", r.Completed, r.Calls, r.Failed)
	}
	if r.DuplicateMutations != 0 || r.MissingMutations != 0 {
		t.Errorf("%d duplicate and %d missing mutations, want 0", r.DuplicateMutations, r.MissingMutations)
	}
	if r.Reconnects != 0 || r.NotFound != 0 || r.SessionLost != 0 || r.GatewayNotFound != 0 {
		t.Errorf("%d re-initializations, %d 404s (%d at the gateways), %d sessions lost; want every session kept",
			r.Reconnects, r.NotFound, r.GatewayNotFound, r.SessionLost)
	}
	if b := r.Balancer; b == nil || b.Answers5xx != 0 {
		t.Errorf("HAProxy figures %+v: want no 5xx answer", b)
	}
	if n := r.GatewayIdem["unavailable"]; n != 0 {
		t.Errorf("%d keyed calls ran without the Redis store, want 0", n)
	}
	t.Logf("%d re-issues", r.Reissues)
}

// checkRolledUnderLoad asserts that every gateway was restarted while it
// carried calls, and that HAProxy took each out of rotation within the
// drain delay, before it stopped accepting.
func checkRolledUnderLoad(t *testing.T, r *Report, drain time.Duration) {
	t.Helper()
	var rolled []string
	inFlight := 0
	for _, ev := range r.Restarts {
		rolled = append(rolled, ev.Gateway)
		inFlight += ev.InFlight
		if ev.Served == 0 {
			t.Errorf("%s had answered no call when it got SIGTERM: the roll was not under load", ev.Gateway)
		}
		if ev.Out <= ev.Stop || ev.Out-ev.Stop >= drain {
			t.Errorf("%s: HAProxy saw it down %v after SIGTERM, want within the drain delay (%v)", ev.Gateway, ev.Out-ev.Stop, drain)
		}
		if ev.Up <= ev.Down || ev.Down <= ev.Stop {
			t.Errorf("%s: stop %v, exit %v, up %v: out of order", ev.Gateway, ev.Stop, ev.Down, ev.Up)
		}
	}
	if diff := cmp.Diff([]string{"gateway-1", "gateway-2", "gateway-3"}, rolled); diff != "" {
		t.Errorf("gateways rolled (-want +got):\n%s", diff)
	}
	if inFlight == 0 {
		t.Error("no gateway had a request in flight when it got SIGTERM")
	}
}

package load

import (
	"bytes"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/sim"
	"github.com/mcpfleet/mcpfleet/internal/store/redistest"
	"github.com/mcpfleet/mcpfleet/internal/testproc"
)

// chaosRun runs the chaos preset c on a fleet of bin and logs its table.
func chaosRun(t *testing.T, bin string, c ChaosOptions) *Report {
	t.Helper()
	o, err := Chaos(c)
	if err != nil {
		t.Fatal(err)
	}
	o.Binary = bin
	if o.Scenario.Gateways > 1 {
		o.HAProxy = testproc.FindBinary(t, "haproxy", "haproxy", "MCPFLEET_REQUIRE_BALANCERS")
		o.RedisServer = testproc.FindBinary(t, "redis-server", "redis-server", redistest.RequireEnv)
	}
	rep := runFor(t, &o)
	var b bytes.Buffer
	if err := WriteComparison(&b, rep, sim.MustRun(o.Scenario), nil); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s\naudit: %+v", b.String(), *rep.Run.Audit)
	if rep.Issued < 50 {
		t.Fatalf("only %d calls issued: too few to mean anything", rep.Issued)
	}
	return rep
}

// noneLost fails t when a call failed, a mutation ran twice, or a call
// that succeeded has no mutation.
func noneLost(t *testing.T, r *Report) {
	t.Helper()
	if r.Failed != 0 || r.DuplicateMutations != 0 || r.Run.Audit.MissingMutations != 0 {
		t.Fatalf("%d failed, %d duplicate mutations, %d missing: want none", r.Failed, r.DuplicateMutations, r.Run.Audit.MissingMutations)
	}
}

// TestLongDrainLosesNothing: with a drain window (grace) longer than the
// longest call, a rolling restart of every replica fails no call, kills
// none and duplicates no mutation, in both eras.
func TestLongDrainLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a fleet")
	}
	// The chaos runs are bound by their clocks, not the CPU: they run
	// together, after the package's CPU-measuring tests.
	t.Parallel()
	bin := mcpfleetBinary(t)
	for _, era := range []string{"2025", "2026"} {
		t.Run(era, func(t *testing.T) {
			t.Parallel()
			r := chaosRun(t, bin, ChaosOptions{Era: era, Grace: 5 * time.Second, Downtime: 300 * time.Millisecond, Seed: 7})
			noneLost(t, r)
			if r.Killed != 0 {
				t.Fatalf("%d calls killed with a grace longer than any call, want 0", r.Killed)
			}
		})
	}
}

// TestShortDrainWithKeysRunsNothingTwice: with a drain window shorter than
// the longest calls some are killed, and with idempotency keys their
// re-issues run no mutation twice.
func TestShortDrainWithKeysRunsNothingTwice(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a fleet")
	}
	// The chaos runs are bound by their clocks, not the CPU: they run
	// together, after the package's CPU-measuring tests.
	t.Parallel()
	bin := mcpfleetBinary(t)
	r := chaosRun(t, bin, ChaosOptions{Era: "2026", Grace: 200 * time.Millisecond, Downtime: 300 * time.Millisecond,
		IdempotencyKeys: true, Rate: 30, Seed: 7})
	if r.Killed == 0 {
		t.Fatal("no call killed with a 200 ms grace: the drain window did not bind")
	}
	if r.DuplicateMutations != 0 || r.Run.Audit.MissingMutations != 0 {
		t.Fatalf("%d duplicate mutations, %d missing, with idempotency keys: want none", r.DuplicateMutations, r.Run.Audit.MissingMutations)
	}
}

// TestHardKillRetriesUndelivered: replicas killed hard under load.
// Requests that never reached the dead replica move on (the gateway's
// not_delivered retries), and the gateway never sends a delivered mutate
// twice: no key has more ledger entries than attempts its client sent.
func TestHardKillRetriesUndelivered(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a fleet")
	}
	// The chaos runs are bound by their clocks, not the CPU: they run
	// together, after the package's CPU-measuring tests.
	t.Parallel()
	bin := mcpfleetBinary(t)
	r := chaosRun(t, bin, ChaosOptions{Era: "2026", Kill: KillHard, Rate: 30, Seed: 7})
	a := r.Run.Audit
	if a.GatewayRetries["not_delivered"] == 0 {
		t.Errorf("gateway retries %v: want not_delivered > 0", a.GatewayRetries)
	}
	if a.ResentByGateway != 0 || a.SingleAttemptDuplicates != 0 || a.MissingMutations != 0 {
		t.Errorf("audit %+v: want no resend, no duplicate of a call sent once, no missing mutation", *a)
	}
}

// TestRollingGatewaysLoseNothing: three gateway processes sharing a secret
// file and a redis-server behind HAProxy checking their /readyz, restarted
// in turn under load: no call fails, no mutation runs twice, and in the
// 2025 era no session is lost (its sealed ID opens in every gateway).
func TestRollingGatewaysLoseNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a fleet")
	}
	// The chaos runs are bound by their clocks, not the CPU: they run
	// together, after the package's CPU-measuring tests.
	t.Parallel()
	bin := mcpfleetBinary(t)
	for _, era := range []string{"2025", "2026"} {
		t.Run(era, func(t *testing.T) {
			t.Parallel()
			r := chaosRun(t, bin, ChaosOptions{Era: era, Roll: RollGateways, Rate: 30, Grace: 5 * time.Second,
				Downtime: 300 * time.Millisecond, IdempotencyKeys: true, Seed: 7})
			noneLost(t, r)
			if r.Reinitializations != 0 || r.NotFound != 0 {
				t.Fatalf("%d re-initializations, %d 404s: a gateway restart lost sessions", r.Reinitializations, r.NotFound)
			}
		})
	}
}

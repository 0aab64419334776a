package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfleet/mcpfleet/internal/proc"
	"github.com/mcpfleet/mcpfleet/internal/testserver"
)

// runChaos runs opts and logs the table; the run is bounded by 40 s (90 s
// rolling the gateways, whose drain delays and restarts take longer).
func runChaos(t *testing.T, opts *Options) *Report {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	bound, restarts := 40*time.Second, opts.Replicas
	if opts.Roll == RollGateways {
		bound, restarts = 90*time.Second, opts.Gateways
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	r, err := Run(ctx, opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var b bytes.Buffer
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", b.String())
	if r.Calls < 50 {
		t.Errorf("only %d calls issued: too few to mean anything", r.Calls)
	}
	if len(r.Restarts) != restarts && restarts != 0 || len(r.Restarts) == 0 {
		t.Errorf("%d of %d restarted, want every one", len(r.Restarts), restarts)
	}
	return r
}

// evidence logs the failed calls and error kinds when a test fails.
func evidence(t *testing.T, r *Report) {
	t.Helper()
	if !t.Failed() && !testing.Verbose() {
		return
	}
	b, _ := json.MarshalIndent(struct {
		Failures     []CallFailure
		ErrorSamples map[string]int
	}{r.Failures, r.ErrorSamples}, "", "  ")
	t.Logf("evidence:\n%s", b)
	if t.Failed() {
		for name, out := range r.Logs {
			t.Logf("%s output (its end):\n%s", name, proc.LastLines(out, 40))
		}
	}
}

// TestLongDrainLosesNothing: with a drain
// window (grace) longer than the longest call, a rolling restart of every
// replica fails no call and duplicates no mutation, in both eras.
func TestLongDrainLosesNothing(t *testing.T) {
	for _, era := range []string{Era2025, Era2026} {
		t.Run(era, func(t *testing.T) {
			t.Parallel()
			r := runChaos(t, &Options{
				Era: era, Replicas: 3, Duration: 8 * time.Second, Rate: 15,
				Cap: 3 * time.Second, Grace: 5 * time.Second, DrainDelay: time.Second,
				Kill: KillTerm, Downtime: 300 * time.Millisecond, Seed: 7,
			})
			defer evidence(t, r)
			if r.Failed != 0 {
				t.Errorf("%d calls failed, want 0", r.Failed)
			}
			if r.DuplicateMutations != 0 {
				t.Errorf("%d duplicate mutations, want 0", r.DuplicateMutations)
			}
			if r.MissingMutations != 0 {
				t.Errorf("%d calls succeeded without their mutation, want 0", r.MissingMutations)
			}
			if r.KilledInFlight != 0 {
				t.Errorf("%d attempts killed in flight with a grace longer than any call, want 0", r.KilledInFlight)
			}
		})
	}
}

// TestShortDrainFailsOnlyKilledCalls is the second: with a drain window
// shorter than the longest call, the only failures are calls killed in
// flight, and with idempotency keys on re-issue no mutation runs twice.
func TestShortDrainFailsOnlyKilledCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("a chaos run takes seconds")
	}
	for _, era := range []string{Era2025, Era2026} {
		t.Run(era, func(t *testing.T) {
			t.Parallel()
			r := runChaos(t, &Options{
				Era: era, Replicas: 3, Duration: 8 * time.Second, Rate: 15,
				Cap: 3 * time.Second, Grace: 200 * time.Millisecond, DrainDelay: time.Second,
				Kill: KillTerm, IdempotencyKeys: true, Downtime: 300 * time.Millisecond, Seed: 7,
			})
			defer evidence(t, r)
			if r.FailedWithoutKill != 0 {
				t.Errorf("%d of %d failed calls had no attempt killed in flight, want 0", r.FailedWithoutKill, r.Failed)
			}
			if r.DuplicateMutations != 0 {
				t.Errorf("%d duplicate mutations with idempotency keys, want 0", r.DuplicateMutations)
			}
			if r.MissingMutations != 0 {
				t.Errorf("%d calls succeeded without their mutation, want 0", r.MissingMutations)
			}
		})
	}
}

// TestHardKillRetriesUndelivered is the third: replicas killed hard under
// load. Requests that never reached the dead replica move on and succeed,
// and the gateway never sends a delivered mutate twice: without idempotency
// keys a client's own re-issue may run a mutation again, but no key has
// more ledger entries than attempts the client sent.
func TestHardKillRetriesUndelivered(t *testing.T) {
	if testing.Short() {
		t.Skip("a chaos run takes seconds")
	}
	r := runChaos(t, &Options{
		Era: Era2026, Replicas: 3, Duration: 8 * time.Second, Rate: 30,
		Cap: 3 * time.Second, Kill: KillHard, Downtime: time.Second, Seed: 7,
	})
	defer evidence(t, r)
	if r.GatewayRetries["not_delivered"] == 0 {
		t.Errorf("gateway retries %v: want not_delivered > 0", r.GatewayRetries)
	}
	if r.ResentByGateway != 0 {
		t.Errorf("%d mutate calls have more ledger entries than client attempts: the gateway resent a delivered call", r.ResentByGateway)
	}
	if r.SingleAttemptDuplicates != 0 {
		t.Errorf("%d mutate calls sent once by the client were applied more than once", r.SingleAttemptDuplicates)
	}
	if r.FailedWithoutKill != 0 {
		t.Errorf("%d of %d failed calls had no attempt killed in flight, want 0", r.FailedWithoutKill, r.Failed)
	}
	if r.MissingMutations != 0 {
		t.Errorf("%d calls succeeded without their mutation, want 0", r.MissingMutations)
	}
}

// TestLedgerAudit checks the mutation figures on a hand-made ledger.
func TestLedgerAudit(t *testing.T) {
	rec := func(key string, attempts int, ok bool) *callRecord {
		return &callRecord{spec: callSpec{key: key, tool: "mutate"}, attempts: make([]attempt, attempts), ok: ok}
	}
	records := []*callRecord{
		rec("call-1", 1, true),  // applied once
		rec("call-2", 2, true),  // re-issued, applied twice: the client's duplicate
		rec("call-3", 1, true),  // sent once, applied twice: the gateway's
		rec("call-4", 1, true),  // succeeded, never applied
		rec("call-5", 3, false), // failed, never applied
	}
	var entries []testserver.LedgerEntry
	for _, k := range []string{"call-1", "call-2", "call-2", "call-3", "call-3"} {
		entries = append(entries, testserver.LedgerEntry{Key: k, Replica: "replica-a"})
	}
	var r Report
	r.audit(records, entries)
	type figures struct{ Applied, Distinct, Duplicate, Missing, Resent, SingleAttempt int }
	got := figures{r.MutationsApplied, r.DistinctMutated, r.DuplicateMutations, r.MissingMutations, r.ResentByGateway, r.SingleAttemptDuplicates}
	want := figures{Applied: 5, Distinct: 3, Duplicate: 2, Missing: 1, Resent: 1, SingleAttempt: 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("audit figures (-want +got):\n%s", diff)
	}
}

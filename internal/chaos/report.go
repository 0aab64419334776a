package chaos

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testserver"
)

// Report is what a run measured: what the clients saw, what the gateway
// counted and what the replicas' ledger says happened.
type Report struct {
	// The run's settings.
	Era             string        `json:"era"`
	Roll            string        `json:"roll"`
	Gateways        int           `json:"gateways"`
	Kill            string        `json:"kill"`
	IdempotencyKeys bool          `json:"idempotency_keys"`
	DrainDelay      time.Duration `json:"drain_delay"`
	Grace           time.Duration `json:"grace"`
	Rate            float64       `json:"rate"`
	Seed            uint64        `json:"seed"`
	Replicas        int           `json:"replicas"`
	Sessions        int           `json:"sessions"`
	// Traffic is how long calls were issued.
	Traffic time.Duration `json:"traffic"`

	// Logical calls, as the clients saw them.
	Calls     int `json:"calls"`     // issued
	Completed int `json:"completed"` // final answer a success
	Failed    int `json:"failed"`    // given up after the last attempt
	// FailedWithoutKill counts failed calls none of whose attempts was
	// killed in flight: failures the restart's cuts do not explain.
	FailedWithoutKill int `json:"failed_without_kill"`
	Attempts          int `json:"attempts"`
	Reissues          int `json:"reissues"` // attempts after the first
	// KilledInFlight counts failed attempts that were running when their
	// replica cut its calls (grace ran out, or hard kill).
	KilledInFlight int `json:"killed_in_flight"`
	// NotFound counts attempts answered "session not found" (404,
	// -32001); Reconnects, sessions opened after the first per client.
	NotFound int `json:"not_found"`
	// SessionLost counts attempts on a session the SDK had closed (its
	// standalone stream got 404 after its replica stopped).
	SessionLost int `json:"session_lost"`
	Reconnects  int `json:"reconnects"`
	Timeouts    int `json:"timeouts"`
	// ReplayedFailures counts failed re-issues answered with the very error
	// an earlier attempt of the same call got, with idempotency keys on:
	// the gateway's recorded answer (mcpfleet_idempotency_total{outcome=
	// "replayed"}), not a new run.
	ReplayedFailures int `json:"replayed_failures"`
	// OtherFailures are failed attempts neither killed in flight, nor 404,
	// nor timed out: each one is worth a look (see Failures).
	OtherFailures int `json:"other_failures"`

	// Mutations: logical mutate calls, and the ledger's view.
	MutateCalls     int `json:"mutate_calls"`
	MutateSucceeded int `json:"mutate_succeeded"`
	// MutationsApplied counts ledger entries; DistinctMutated, the keys
	// among them.
	MutationsApplied int `json:"mutations_applied"`
	DistinctMutated  int `json:"distinct_mutated"`
	// DuplicateMutations counts logical mutate calls whose key appears
	// more than once in the ledger.
	DuplicateMutations int `json:"duplicate_mutations"`
	// MissingMutations counts mutate calls that succeeded but whose key is
	// not in the ledger (should be 0).
	MissingMutations int `json:"missing_mutations"`
	// ResentByGateway counts mutate calls with more ledger entries than
	// attempts the client sent: only a resend by the gateway explains one.
	ResentByGateway int `json:"resent_by_gateway"`
	// SingleAttemptDuplicates counts mutate calls sent once by the client
	// whose key appears more than once in the ledger.
	SingleAttemptDuplicates int `json:"single_attempt_duplicates"`

	// The gateway's counters; with RollGateways, summed over every gateway
	// process that ran.
	GatewayNotFound int            `json:"gateway_session_not_found"`
	GatewayRetries  map[string]int `json:"gateway_retries"`
	GatewayIdem     map[string]int `json:"gateway_idempotency"`
	// Balancer is what HAProxy counted in front of the gateway processes;
	// nil with RollReplicas.
	Balancer *BalancerFigures `json:"balancer,omitempty"`

	Restarts []RestartEvent `json:"restarts"`
	// Failures lists up to 20 failed logical calls with their attempts.
	Failures []CallFailure `json:"failures,omitempty"`
	// ErrorSamples counts the distinct errors of failed attempts (numbers
	// stripped), for a first look at what went wrong.
	ErrorSamples map[string]int `json:"error_samples,omitempty"`
	// Logs holds the end of each process's output, by process (every
	// start of each gateway, HAProxy, redis-server), with RollGateways:
	// evidence for a run that went wrong.
	Logs map[string]string `json:"-"`
}

// BalancerFigures are HAProxy's counters ("show stat") at the end of a run
// with RollGateways.
type BalancerFigures struct {
	// Requests is how many requests HAProxy sent each gateway (its stot).
	Requests map[string]int `json:"requests"`
	// Answers5xx counts answers with a 5xx status HAProxy gave its
	// clients (the frontend's hrsp_5xx): a gateway's own, or HAProxy's
	// 502, 503 and 504 when no gateway answered.
	Answers5xx int `json:"answers_5xx"`
	// ConnErrors counts failed connections to a gateway (econ), and
	// RespErrors responses that broke off (eresp).
	ConnErrors int `json:"conn_errors"`
	RespErrors int `json:"resp_errors"`
	// Retries counts connections HAProxy tried again (wretr), and
	// Redispatches those it moved to another gateway (wredis).
	Retries      int `json:"retries"`
	Redispatches int `json:"redispatches"`
}

// CallFailure is one failed logical call, for the evidence.
type CallFailure struct {
	Key      string    `json:"key"`
	Tool     string    `json:"tool"`
	Seconds  float64   `json:"seconds"`
	Attempts []attempt `json:"attempts"`
}

// tally fills the client-side figures from the call records, marking the
// attempts killed in flight by the restart events' cuts.
func (r *Report) tally(records []*callRecord, events []RestartEvent, clients []*client) {
	r.ErrorSamples = map[string]int{}
	for _, rec := range records {
		r.Calls++
		r.Attempts += len(rec.attempts)
		r.Reissues += max(0, len(rec.attempts)-1)
		killed := false
		seen := map[string]bool{}
		for i := range rec.attempts {
			a := &rec.attempts[i]
			if a.Kind == kindOK {
				continue
			}
			a.Killed = killedBy(a, events)
			killed = killed || a.Killed
			replayed := r.IdempotencyKeys && seen[a.Err]
			seen[a.Err] = true
			switch {
			case a.Killed:
				r.KilledInFlight++
			case replayed:
				r.ReplayedFailures++
			case a.Kind == kindNotFound, a.Kind == kindLost, a.Kind == kindTimeout:
			default:
				r.OtherFailures++
			}
			if a.Kind == kindNotFound {
				r.NotFound++
			}
			if a.Kind == kindTimeout {
				r.Timeouts++
			}
			if a.Kind == kindLost {
				r.SessionLost++
			}
			r.ErrorSamples[sample(a.Err)]++
		}
		if rec.spec.tool == "mutate" {
			r.MutateCalls++
		}
		if rec.ok {
			r.Completed++
			if rec.spec.tool == "mutate" {
				r.MutateSucceeded++
			}
			continue
		}
		r.Failed++
		if !killed {
			r.FailedWithoutKill++
		}
		if len(r.Failures) < 20 {
			r.Failures = append(r.Failures, CallFailure{Key: rec.spec.key, Tool: rec.spec.tool, Seconds: rec.spec.seconds, Attempts: rec.attempts})
		}
	}
	for _, c := range clients {
		r.Reconnects += max(0, int(c.connects.Load())-1)
	}
}

// killedBy reports whether failed attempt a was running when a replica cut
// its calls. Which replica served it the client cannot know; any cut that
// falls inside the attempt counts, which the OtherFailures figure keeps
// honest: failures with no cut inside show there.
func killedBy(a *attempt, events []RestartEvent) bool {
	const slack = 50 * time.Millisecond // the client hears of a cut a moment after
	for _, ev := range events {
		if ev.Cut >= 0 && a.Start <= ev.Cut && ev.Cut <= a.End+slack {
			return true
		}
	}
	return false
}

// sample strips the digits of an error, so that errors differing only in
// ids and keys count as one.
func sample(err string) string {
	if i := strings.Index(err, "(session ID:"); i >= 0 {
		err = err[:i] + "(session ID: ...)"
	}
	s := strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return '#'
		}
		return r
	}, err)
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

// audit fills the mutation figures from the ledger.
func (r *Report) audit(records []*callRecord, entries []testserver.LedgerEntry) {
	perKey := map[string]int{}
	for _, e := range entries {
		perKey[e.Key]++
	}
	r.MutationsApplied = len(entries)
	r.DistinctMutated = len(perKey)
	for _, rec := range records {
		if rec.spec.tool != "mutate" {
			continue
		}
		n := perKey[rec.spec.key]
		if n > 1 {
			r.DuplicateMutations++
			if len(rec.attempts) == 1 {
				r.SingleAttemptDuplicates++
			}
		}
		if n > len(rec.attempts) {
			r.ResentByGateway++
		}
		if rec.ok && n == 0 {
			r.MissingMutations++
		}
	}
}

// WriteTable prints the report as a table.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	keys := "off"
	if r.IdempotencyKeys {
		keys = "on"
	}
	rolled := "replicas"
	if r.Roll == RollGateways {
		rolled = fmt.Sprintf("%d gateway processes behind HAProxy", r.Gateways)
	}
	fmt.Fprintf(tw, "era %s, rolling %s, kill %s, drain delay %v, grace %v, idempotency keys %s, %d replicas, %d sessions, %.0f calls/s, seed %d, traffic %v\n\n",
		r.Era, rolled, r.Kill, r.DrainDelay, r.Grace, keys, r.Replicas, r.Sessions, r.Rate, r.Seed, r.Traffic.Round(100*time.Millisecond))
	row := func(name string, v any, note string) { fmt.Fprintf(tw, "%s\t%v\t%s\n", name, v, note) }
	row("calls issued", r.Calls, "logical calls")
	row("completed", r.Completed, "final answer a success")
	row("failed", r.Failed, fmt.Sprintf("gave up; %d without any attempt killed in flight", r.FailedWithoutKill))
	row("re-issues", r.Reissues, fmt.Sprintf("attempts after the first (%d attempts)", r.Attempts))
	row("killed in flight", r.KilledInFlight, "failed attempts running when their replica cut its calls")
	row("404s (clients)", r.NotFound, fmt.Sprintf("session not found; %d reconnects", r.Reconnects))
	row("404s (gateway)", r.GatewayNotFound, "mcpfleet_session_not_found_total")
	row("sessions lost", r.SessionLost, "attempts on a session the SDK closed after its stream got 404")
	row("timeouts", r.Timeouts, "attempts past the client's deadline")
	row("replayed failures", r.ReplayedFailures, "re-issues answered the first attempt's error again (keys on)")
	row("other failed attempts", r.OtherFailures, "none of the above")
	row("mutate calls", r.MutateCalls, fmt.Sprintf("%d succeeded", r.MutateSucceeded))
	row("mutations applied", r.MutationsApplied, fmt.Sprintf("ledger entries (%d keys)", r.DistinctMutated))
	row("duplicate mutations", r.DuplicateMutations, fmt.Sprintf("keys mutated more than once (%d sent once by the client)", r.SingleAttemptDuplicates))
	row("missing mutations", r.MissingMutations, "succeeded, not in the ledger")
	row("resent by the gateway", r.ResentByGateway, "more ledger entries than client attempts")
	row("gateway retries", formatCounts(r.GatewayRetries), "mcpfleet_retries_total by reason")
	row("gateway idempotency", formatCounts(r.GatewayIdem), "mcpfleet_idempotency_total by outcome")
	if b := r.Balancer; b != nil {
		row("HAProxy requests", formatCounts(b.Requests), "sent to each gateway (stot)")
		row("HAProxy 5xx answers", b.Answers5xx, "to clients (frontend hrsp_5xx)")
		row("HAProxy errors", fmt.Sprintf("conn=%d resp=%d", b.ConnErrors, b.RespErrors), "failed connections to gateways (econ), broken responses (eresp)")
		row("HAProxy retries", fmt.Sprintf("%d (%d redispatched)", b.Retries, b.Redispatches), "connections tried again (wretr, wredis)")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.ErrorSamples) > 0 {
		fmt.Fprintln(w, "\nerrors of failed attempts (digits as #):")
		var lines []string
		for e, n := range r.ErrorSamples {
			lines = append(lines, fmt.Sprintf("  %4d  %s", n, e))
		}
		sort.Strings(lines)
		fmt.Fprintln(w, strings.Join(lines, "\n"))
	}
	fmt.Fprintln(w, "\nrolling restart (seconds from the first call):")
	for _, ev := range r.Restarts {
		fmt.Fprintln(w, "  "+ev.String())
	}
	return nil
}

// String prints the event on one line, seconds from the first call.
func (ev RestartEvent) String() string {
	cut := "none"
	if ev.Cut >= 0 {
		cut = fmt.Sprintf("%.2f", ev.Cut.Seconds())
	}
	if ev.Gateway == "" {
		return fmt.Sprintf("%s  stop %.2f  cut %s  down %.2f  up %.2f", ev.Replica, ev.Stop.Seconds(), cut, ev.Down.Seconds(), ev.Up.Seconds())
	}
	return fmt.Sprintf("%s  stop %.2f  out of HAProxy %.2f  cut %s  exited %.2f  up %.2f  (%d calls answered before SIGTERM, %d in flight then, %d answered after)",
		ev.Gateway, ev.Stop.Seconds(), ev.Out.Seconds(), cut, ev.Down.Seconds(), ev.Up.Seconds(), ev.Served, ev.InFlight, ev.Drained)
}

// formatCounts prints a map as "a=1 b=2", sorted, or "0".
func formatCounts(m map[string]int) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s=%d", k, v))
	}
	if len(parts) == 0 {
		return "0"
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

package upstream

import (
	"log/slog"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/health"
)

// policy is what a running Checker lends the fleet, so that reports from
// the forwarding path follow the same fall/rise rules and notifications.
type policy struct {
	fall, rise int
	onChange   func(replica string, from, to State)
	log        *slog.Logger
}

// State returns the replica's health. It reads one atomic.
func (r *Replica) State() State { return State(r.state.Load()) }

// ReportConnectFailure tells the replica's health that a connection to it
// failed (dial refused or timed out, TLS handshake failed): it counts as
// one failed check, at once, so with fall 2 two consecutive connect failures
// take an up replica down without waiting for the next check. Only a failure
// to connect should be reported, not a failure after the request was
// delivered, and not a cancellation by the client.
//
// Passive reports act only while a Checker runs on the fleet: without
// active checks nothing would bring an ejected replica back, so they are
// ignored.
//
// The failure is kept among the replica's recent failures either way.
func (r *Replica) ReportConnectFailure() {
	r.Failed(Failure{At: time.Now(), Outcome: OutcomeConnect})
	r.report(ResultFail, "connect failed")
}

// ReportDraining tells the replica's health that it answered a forwarded
// request with 503 {"status":"draining"}: it moves to draining at once, as
// after a check with that answer. Like ReportConnectFailure it acts only
// while a Checker runs.
func (r *Replica) ReportDraining() {
	r.report(ResultDraining, "draining answer")
}

// ReportSuccess tells the replica's health that a request reached it. It
// breaks the failure streak of an up replica, so isolated connect failures
// spread over time never add up to fall. It never brings a down or draining
// replica up: a draining replica still serves its pinned sessions
// successfully, and only checks may say it is back. It costs one atomic load
// unless an up replica has a failure streak.
func (r *Replica) ReportSuccess() {
	if !r.suspect.Load() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.status.State == StateUp {
		r.status.Failures = 0
		r.suspect.Store(false)
	}
}

// report applies a passive result under the running checker's policy.
func (r *Replica) report(res Result, reason string) {
	if r.policy == nil {
		return
	}
	if p := r.policy.Load(); p != nil {
		r.observe(res, reason, p)
	}
}

// observe applies one result and, on a transition, logs it and calls
// OnChange. Both happen under mu, so one replica's notifications arrive in
// the order of its transitions.
func (r *Replica) observe(res Result, reason string, p *policy) {
	r.observeWith(res, reason, p, p.fall, p.rise)
}

// observeWith is observe with fall and rise of its own (a replica's first
// checks, checkOne).
func (r *Replica) observeWith(res Result, reason string, p *policy, fall, rise int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	from := r.status.State
	r.status = health.Next(r.status, res, fall, rise)
	to := r.status.State
	r.state.Store(int32(to))
	r.suspect.Store(to == StateUp && r.status.Failures > 0)
	if from == to {
		// A down replica's reason is logged again only when it moves to
		// or from "no MCP endpoint" (the URL is wrong, or was fixed), not
		// at every check.
		if to == StateDown && reason != r.loggedReason &&
			(health.IsNoEndpoint(reason) || health.IsNoEndpoint(r.loggedReason)) {
			r.loggedReason = reason
			p.log.Info("replica still down", "replica", r.name, "reason", reason)
		}
		return
	}
	r.loggedReason = reason
	p.log.Info("replica health changed", "replica", r.name,
		"from", from.String(), "to", to.String(), "reason", reason)
	if p.onChange != nil {
		p.onChange(r.name, from, to)
	}
}

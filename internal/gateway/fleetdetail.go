package gateway

import (
	"github.com/mcpfleet/mcpfleet/internal/admin"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// recentView is a replica's last checks and failures for the fleet view's
// detail (GET /api/fleet: checks, recent_errors), newest first; empty
// lists, never nil, as the schema wants.
func recentView(r *upstream.Replica) ([]admin.LastCheck, []admin.Failure) {
	cs := r.RecentChecks()
	checks := make([]admin.LastCheck, 0, len(cs))
	for _, c := range cs {
		checks = append(checks, admin.LastCheck{At: c.At.UTC(), Result: c.Result.String(), Reason: c.Reason})
	}
	fs := r.RecentFailures()
	failures := make([]admin.Failure, 0, len(fs))
	for _, f := range fs {
		failures = append(failures, admin.Failure{At: f.At.UTC(), Outcome: f.Outcome, Method: f.Method, Status: f.Status})
	}
	return checks, failures
}

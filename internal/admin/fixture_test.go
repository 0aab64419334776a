package admin

import (
	"fmt"
	"net/http"
	"sync"
	"time"
)

// fixture is a fleet of three replicas in the shapes the page has to
// draw: a busy one with five-digit counts and sessions, one down whose
// last check failed with a long reason and whose requests failed, and one
// whose transport is a child process with the last lines of its standard
// error. Its counts grow with every snapshot, as a fleet under load does.
type fixture struct {
	mu    sync.Mutex
	polls int             // guarded by mu
	held  map[string]bool // guarded by mu
}

func newFixture() *fixture { return &fixture{held: map[string]bool{}} }

func (f *fixture) Fleet(now time.Time) Fleet {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.polls++
	n := uint64(f.polls)
	v := Fleet{At: now, Gateway: Gateway{Version: "v0.1.0 (3351c8200d6f)", Started: now.Add(-3 * time.Hour), Uptime: 3 * 3600, Stores: []Store{{Name: "limits", Kind: "redis", Healthy: true}},
		Limits: Limits{Admitted: map[string]uint64{"none": 1200 + 40*n}, Refused: map[string]uint64{"rate": 3}},
		Authz:  &Authz{Allowed: map[string]uint64{"default": 1100 + 40*n, "restart-oncall": 2}, Denied: map[string]uint64{"mutate-needs-write": 7}}}}
	checks := func(res, reason string) []LastCheck {
		var cs []LastCheck
		for i := range 6 {
			cs = append(cs, LastCheck{At: now.Add(-time.Duration(i) * 5 * time.Second), Result: res, Reason: reason})
		}
		return cs
	}
	busy := Replica{Name: "replica-a", URL: "http://10.0.0.11:8080/mcp", State: StateUp, Health: StateUp,
		InFlight: int64(3 + f.polls%5), Sessions: 1412, Streams: 37, Requests: 102330 + 29*n, Errors: 12, Retries: 3,
		LatencyP50: 1.9, LatencyP99: 41.2, Checks: checks("ok", "status 200")}
	down := Replica{Name: "replica-b", URL: "http://10.0.0.12:8080/mcp", State: StateDown, Health: StateDown,
		Requests: 98110, Errors: 517 + n, Retries: 212, LatencyP50: 2.1, LatencyP99: 4249.5,
		Checks: checks("fail", `Get "http://10.0.0.12:8080/health": dial tcp 10.0.0.12:8080: connect: connection refused`)}
	// Refused three times, after two timeouts, after a check that passed.
	down.Checks[3].Reason, down.Checks[4].Reason = "timeout after 1s", "timeout after 1s"
	down.Checks[5].Result, down.Checks[5].Reason = "ok", "status 200"
	for i := range 4 {
		down.RecentErrors = append(down.RecentErrors, Failure{At: now.Add(-time.Duration(i) * time.Second), Outcome: "connect_failed", Method: "tools/call"})
	}
	down.RecentErrors = append(down.RecentErrors, Failure{At: now.Add(-9 * time.Second), Outcome: "upstream_error", Method: "tools/call", Status: 502},
		Failure{At: now.Add(-12 * time.Second), Outcome: "upstream_cut", Method: "tools/call", Status: 200})
	started := now.Add(-150 * time.Minute) // its third run
	child := Replica{Name: "github-stdio", URL: "http://127.0.0.1:0/mcp", State: StateUp, Health: StateUp,
		InFlight: 1, Sessions: 3, Streams: 1, Requests: 5120 + 3*n, LatencyP50: 12.5, LatencyP99: 310,
		Checks: checks("ok", "initialize answered"), Stderr: []string{"npm warn exec The following package was not found and will be installed", "GitHub MCP Server running on stdio"},
		Process: &Process{PID: 48213, Started: &started, UptimeSeconds: now.Sub(started).Seconds(), Restarts: 2, Sessions: 3, SessionChildren: []SessionChild{
			{Name: "github-s-0a1b2c3d4e", PID: 4343, UptimeSeconds: 12, Stderr: []string{"session child ready"}},
		}}}
	for _, r := range []*Replica{&busy, &down, &child} {
		r.LastCheck = &r.Checks[0]
		if r.Held = f.held[r.Name]; r.Held {
			r.State = StateDraining
		}
		v.Replicas = append(v.Replicas, *r)
	}
	return v
}

func (f *fixture) SetHeld(name string, held bool) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch name {
	case "replica-a", "replica-b", "github-stdio":
	default:
		return false, ErrUnknownReplica
	}
	old := f.held[name]
	f.held[name] = held
	return old != held, nil
}

// fixtureTools answers GET /api/tools as the gateway's watcher does for
// the fixture: two replicas listed, the one down never listed.
var fixtureTools = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"lock": false, "on_unlocked": "warn", "majority_digest": "sha256:4f1c0b9e", "replicas": [
  {"name": "replica-a", "digest": "sha256:4f1c0b9e", "era": "2026-07-28", "listed_at": "2026-12-01T21:50:00Z", "quarantined": false,
   "tools": [{"name": "search", "digest": "sha256:aa01", "status": "ok"}, {"name": "fetch", "digest": "sha256:bb02", "status": "ok"}], "changes": []},
  {"name": "replica-b", "error": "connect failed", "quarantined": false, "tools": [], "changes": []},
  {"name": "github-stdio", "digest": "sha256:9e77d2a1", "era": "2025-11-25", "listed_at": "2026-12-01T21:50:00Z", "quarantined": false,
   "tools": [{"name": "create_issue", "digest": "sha256:cc03", "status": "added"}], "changes": [{"tool": "create_issue", "what": "added"}]}
]}`)
})

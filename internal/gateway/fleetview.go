package gateway

import (
	"context"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/admin"
	"github.com/mcpfleet/mcpfleet/internal/health"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
	"github.com/mcpfleet/mcpfleet/internal/version"
	dto "github.com/prometheus/client_model/go"
)

var _ admin.Source = (*Gateway)(nil)

// StoreInfo names a piece of shared state the gateway uses and where it
// lives, for the fleet view.
type StoreInfo struct {
	// Name is what it keeps: idempotency, tasks, limits, cache, resume.
	Name string
	// Kind is memory or redis.
	Kind string
	// Check, when not nil, says whether the store answers (a Redis
	// PING); nil counts as always healthy.
	Check func(context.Context) error
}

// Fleet returns the gateway's view of its fleet at now (GET /api/fleet,
// docs/ADMIN.md).
func (g *Gateway) Fleet(now time.Time) admin.Fleet {
	snap := g.fleet.Snapshot()
	f := admin.Fleet{At: now.UTC(), Gateway: g.gatewayView(now), Replicas: make([]admin.Replica, 0, snap.Len())}
	for i := range snap.Len() {
		v := replicaView(snap.At(i), now)
		if g.opts.ChildView != nil {
			v.Process, v.Stderr = g.opts.ChildView(v.Name, now)
		}
		f.Replicas = append(f.Replicas, v)
	}
	return f
}

func replicaView(r *upstream.Replica, now time.Time) admin.Replica {
	st := r.Stats(now)
	v := admin.Replica{
		Name:       r.Name(),
		URL:        r.URL().String(),
		Health:     healthName(r.Status()),
		Held:       r.Held(),
		InFlight:   r.InFlight(),
		Sessions:   st.Sessions,
		Streams:    st.Streams,
		Requests:   st.Requests,
		Errors:     st.Errors,
		Retries:    st.Retries,
		LatencyP50: ms(st.P50),
		LatencyP99: ms(st.P99),
	}
	v.State = v.Health
	if v.Held {
		v.State = admin.StateDraining
	}
	if r.Quarantined() {
		v.State = admin.StateQuarantined
	}
	if c := r.LastCheck(); c != nil {
		v.LastCheck = &admin.LastCheck{At: c.At.UTC(), Result: c.Result.String(), Reason: c.Reason}
	}
	v.Checks, v.RecentErrors = recentView(r)
	return v
}

// healthName is the state the checks give: a down replica whose checks
// have begun to pass again is checking.
func healthName(s upstream.Status) string {
	if s.State == health.StateDown && s.Successes > 0 {
		return admin.StateChecking
	}
	return s.State.String()
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func (g *Gateway) gatewayView(now time.Time) admin.Gateway {
	build := version.Get()
	v := admin.Gateway{
		Version:  build.Short(),
		Build:    &build,
		Started:  g.started.UTC(),
		Uptime:   float64(now.Sub(g.started).Milliseconds()) / 1000,
		Draining: g.draining.Load(),
		Stores:   []admin.Store{},
		Limits:   admin.Limits{Admitted: map[string]uint64{}, Refused: map[string]uint64{}},
	}
	// The stores share one client: it is asked once per view.
	var asked bool
	var err error
	for _, s := range g.opts.Stores {
		st := admin.Store{Name: s.Name, Kind: s.Kind, Healthy: true}
		if s.Check != nil {
			if !asked {
				ctx, cancel := context.WithTimeout(context.Background(), storeCheckTimeout)
				err = s.Check(ctx)
				cancel()
				asked = true
			}
			if err != nil {
				st.Healthy, st.Error = false, "does not answer"
			}
		}
		v.Stores = append(v.Stores, st)
	}
	if g.authz.Load() != nil {
		v.Authz = &admin.Authz{Allowed: map[string]uint64{}, Denied: map[string]uint64{}}
	}
	g.countersInto(&v)
	return v
}

// countersInto reads the limits, cache and fail-open counters from the
// gateway's own metrics, once per view: nothing is counted twice on the
// forwarding path for the view's sake.
func (g *Gateway) countersInto(v *admin.Gateway) {
	fams, err := g.metrics.root.Gather()
	if err != nil {
		g.log.Warn("reading metrics for the fleet view", "error", err)
	}
	for _, fam := range fams {
		for _, m := range fam.GetMetric() {
			if g.opts.Service != "" && label(m, "service") != g.opts.Service {
				continue // another service's, in the registry they share
			}
			n := uint64(m.GetCounter().GetValue())
			switch fam.GetName() {
			case "mcpfleet_limit_decisions_total":
				if label(m, "decision") == "admitted" {
					v.Limits.Admitted[label(m, "reason")] += n
				} else {
					v.Limits.Refused[label(m, "reason")] += n
				}
			case "mcpfleet_cache_total":
				switch label(m, "outcome") {
				case "hit":
					v.Cache.Hits += n
				case "miss":
					v.Cache.Misses += n
				default:
					v.Cache.Bypass += n
				}
			case "mcpfleet_authz_decisions_total":
				if v.Authz == nil {
					break
				}
				if label(m, "decision") == "allow" {
					v.Authz.Allowed[label(m, "rule")] += n
				} else {
					v.Authz.Denied[label(m, "rule")] += n
				}
			case "mcpfleet_cache_errors_total":
				v.Cache.Errors += n
			case "mcpfleet_limits_fail_open_total":
				v.FailOpen.Limits += n
			case "mcpfleet_idempotency_total":
				if label(m, "outcome") == "unavailable" {
					v.FailOpen.Idempotency += n
				}
			}
		}
	}
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// SetHeld drains the replica named name by hand, or gives it back to its
// health checks (POST /api/replicas/{name}/drain and .../resume): held,
// it takes no new 2026-07-28 call and no new session, while its sessions
// and calls in flight go on. The hold is this gateway's alone and lasts
// while the replica stays in the fleet under the same name and URL.
func (g *Gateway) SetHeld(name string, held bool) (bool, error) {
	r := g.fleet.Snapshot().Lookup(name)
	if r == nil {
		return false, admin.ErrUnknownReplica
	}
	return r.SetHeld(held), nil
}

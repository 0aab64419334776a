package gateway

import (
	"net/http"

	"github.com/mcpfleet/mcpfleet/internal/session"
	"github.com/mcpfleet/mcpfleet/internal/telemetry"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the gateway's Prometheus metrics, in a registry of their own
// (no global state: several gateways may run in one process). Labels carry
// method names from a fixed list, era, replica names and outcomes: never a
// credential, a session ID or anything else a client chooses.
type Metrics struct {
	root          *prometheus.Registry  // what Handler serves
	reg           prometheus.Registerer // root, under the service label if any
	requests      *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	serverOps     *prometheus.HistogramVec // mcp.server.operation.duration
	clientOps     *prometheus.HistogramVec // mcp.client.operation.duration
	streams       prometheus.Gauge
	parked        prometheus.Gauge
	keepAlives    prometheus.Counter
	retries       *prometheus.CounterVec
	sessionMisses *prometheus.CounterVec
	replicaLost   *prometheus.CounterVec // mcpfleet_replica_lost_calls_total (lostrelay.go)
	idempotency   *prometheus.CounterVec
	idReused      prometheus.Counter
	healthChanges *prometheus.CounterVec
	noneEligible  prometheus.Counter

	limitDecisions *prometheus.CounterVec
	limitFailOpen  prometheus.Counter
	limitStore     prometheus.Histogram

	toolReroutes prometheus.Counter

	memoryShed *prometheus.CounterVec

	capacityFull     *prometheus.CounterVec
	capacityRefused  *prometheus.CounterVec
	capacityFailOpen prometheus.Counter
	capacityWait     prometheus.Histogram

	auth               *prometheus.CounterVec
	authCached         prometheus.Counter
	authz              *authzMetrics
	bindingRefused     *prometheus.CounterVec
	cache              *prometheus.CounterVec
	cacheErrors        prometheus.Counter
	cacheInvalidations prometheus.Counter
}

func newMetrics(g *Gateway) *Metrics {
	root := g.opts.Registry
	if root == nil {
		root = prometheus.NewRegistry()
	}
	var reg prometheus.Registerer = root
	if g.opts.Service != "" {
		reg = prometheus.WrapRegistererWith(prometheus.Labels{"service": g.opts.Service}, root)
	}
	m := &Metrics{
		root: root,
		reg:  reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpfleet_requests_total",
			Help: "Requests by JSON-RPC method, protocol era, replica and outcome.",
		}, []string{"method", "era", "replica", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcpfleet_request_duration_seconds",
			Help:    "Time from request to the end of its answer (streams included).",
			Buckets: []float64{.001, .005, .01, .05, .1, .5, 1, 5, 15, 60, 300},
		}, []string{"method", "era"}),
		// The MCP semantic conventions' two durations, in their buckets,
		// under Prometheus names (OpenTelemetry's mapping: dots to
		// underscores, the unit as a suffix).
		serverOps: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcp_server_operation_duration_seconds",
			Help:    "MCP request duration as the gateway, the client's server, saw it: from the request to the end of its answer (OpenTelemetry semantic conventions for MCP). gen_ai_tool_name is _OTHER for a tool no replica declared.",
			Buckets: telemetry.OperationBuckets,
		}, []string{"mcp_method_name", "gen_ai_tool_name", "error_type"}),
		clientOps: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcp_client_operation_duration_seconds",
			Help:    "Each attempt at a replica, from sending the request to its answer's head (OpenTelemetry semantic conventions for MCP).",
			Buckets: telemetry.OperationBuckets,
		}, []string{"mcp_method_name", "gen_ai_tool_name", "error_type", "replica"}),
		streams: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mcpfleet_open_streams",
			Help: "SSE streams being relayed now.",
		}),
		parked: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mcpfleet_parked_streams",
			Help: "Open standalone SSE streams waiting for their replica's next event with no goroutine of their own (HTTP/1.1 on Linux).",
		}),
		keepAlives: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mcpfleet_keepalives_total",
			Help: "SSE keep-alive comments sent to clients.",
		}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpfleet_retries_total",
			Help: "Requests moved to another replica, by why that was safe: not_delivered, draining (refused unrun), delivered_safe (read-only or idempotent).",
		}, []string{"reason"}),
		sessionMisses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpfleet_session_not_found_total",
			Help: "Legacy requests answered 404 (-32001), by reason.",
		}, []string{"reason"}),
	}
	m.idempotency = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpfleet_idempotency_total",
		Help: "Idempotent calls: replayed (answered from the record), waited (for a running first execution), unavailable (store down: ran without deduplication), key_reused (an idempotency key reused with another payload: refused, 422).",
	}, []string{"outcome"})
	m.idReused = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "mcpfleet_jsonrpc_id_reused_total",
		Help: "Legacy requests whose JSON-RPC id their session used before for another request: run as new calls, never answered from the first one's record.",
	})
	m.healthChanges = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpfleet_replica_health_changes_total",
		Help: "Replica health state changes, by replica, from and to (up, down, draining).",
	}, []string{"replica", "from", "to"})
	m.noneEligible = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "mcpfleet_none_eligible_total",
		Help: "Requests that found no healthy replica and were sent to one anyway.",
	})
	m.limitDecisions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpfleet_limit_decisions_total",
		Help: "Governed calls by decision (admitted, refused) and reason (none, rate, concurrency, tool, store, sessions, address; fail_open for calls let through while the store did not answer).",
	}, []string{"decision", "reason"})
	m.limitFailOpen = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "mcpfleet_limits_fail_open_total",
		Help: "Governed calls let through without a decision because the limits store did not answer (on_store_error: open).",
	})
	m.limitStore = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "mcpfleet_limit_store_seconds",
		Help:    "Time the limits store took to decide a call (one round trip for Redis).",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .1, .25, 1},
	})
	m.cache = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpfleet_cache_total",
		Help: "Requests of cacheable methods by method and outcome: hit (answered from the cache), miss (asked the replica), bypass (not cacheable: input responses, a tool not named or not declared read-only, ...).",
	}, []string{"method", "outcome"})
	m.cacheErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "mcpfleet_cache_errors_total",
		Help: "Cache store operations that failed (the replica answered instead).",
	})
	m.cacheInvalidations = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "mcpfleet_cache_invalidations_total",
		Help: "Invalidations made on a replica's list_changed or resources/updated notification.",
	})
	m.toolReroutes = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "mcpfleet_tool_reroutes_total",
		Help: "tools/call requests that the policy alone would have sent to a replica not declaring the tool, sent to one that does (tool-aware routing).",
	})
	m.reg.MustRegister(m.toolReroutes, &toolsCollector{g: g})
	m.memoryShed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpfleet_memory_shed_total",
		Help: "What the memory budget shed: streams no longer kept for a resume (unkept), new work refused with 503 (refused).",
	}, []string{"action"})
	m.reg.MustRegister(m.memoryShed, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "mcpfleet_memory_level",
		Help: "How near the memory budget the process is: 0 ok, 1 shedding kept streams, 2 refusing new streams and sessions.",
	}, func() float64 { return float64(g.mem.Level()) }))
	m.capacityFull = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpfleet_capacity_full_total",
		Help: "Times a request found a replica at its max_inflight and looked further, by replica.",
	}, []string{"replica"})
	m.capacityRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpfleet_capacity_refused_total",
		Help: "Requests answered 503 because every replica they could go to was at its max_inflight, by reason: full (no queue), queue_full, timeout (queue_timeout passed), store (the store did not answer; on_store_error closed).",
	}, []string{"reason"})
	m.capacityFailOpen = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "mcpfleet_capacity_fail_open_total",
		Help: "Requests sent without a place because the capacity store did not answer (on_store_error: open).",
	})
	m.capacityWait = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "mcpfleet_capacity_queue_seconds",
		Help:    "Time requests waited in the queue for a replica's place (those that waited).",
		Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	})
	m.reg.MustRegister(m.capacityFull, m.capacityRefused, m.capacityFailOpen, m.capacityWait,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "mcpfleet_capacity_queued",
			Help: "Requests waiting for a replica's place now.",
		}, func() float64 {
			if g.cap == nil {
				return 0
			}
			return float64(g.cap.queued())
		}))
	m.auth = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpfleet_auth_total",
		Help: "Bearer tokens checked at the gateway (auth on), by outcome: ok, missing, invalid.",
	}, []string{"outcome"})
	m.authCached = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "mcpfleet_auth_token_cache_hits_total",
		Help: "Tokens of mcpfleet_auth_total{outcome=\"ok\"} answered by the verified-token cache, without a signature check.",
	})
	m.reg.MustRegister(m.auth, m.authCached)
	m.authz = newAuthzMetrics(m.reg)
	m.bindingRefused = newBindingMetrics(m.reg)
	m.replicaLost = newLostMetric(m.reg)
	m.reg.MustRegister(m.cache, m.cacheErrors, m.cacheInvalidations,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "mcpfleet_cache_bytes",
			Help: "Bytes of answers the local cache holds (cache.mode local).",
		}, g.cacheBytes))
	m.reg.MustRegister(m.limitDecisions, m.limitFailOpen, m.limitStore,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "mcpfleet_limit_leases",
			Help: "Concurrency and tool-cap leases this gateway holds for calls in flight.",
		}, func() float64 {
			if g.opts.Limits == nil {
				return 0
			}
			return float64(g.opts.Limits.Held())
		}))
	m.reg.MustRegister(m.noneEligible, m.healthChanges, m.idempotency, m.idReused, m.requests, m.duration, m.serverOps, m.clientOps, m.streams, m.parked, m.keepAlives, m.retries, m.sessionMisses,
		&fleetCollector{g: g},
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "mcpfleet_tasks",
			Help: "2026-07-28 tasks whose replica the gateway remembers.",
		}, func() float64 {
			if t, ok := g.tasks.(*session.Tasks); ok {
				return float64(t.Len())
			}
			return 0 // a shared registry is counted by its store
		}),
	)
	m.zeroSeries()
	return m
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.root, promhttp.HandlerOpts{})
}

// Registry returns the registry, so that the process can add its own
// collectors (Go runtime, process).
func (m *Metrics) Registry() *prometheus.Registry { return m.root }

// fleetCollector reports per-replica gauges read from the current snapshot
// at scrape time, so replicas that leave the fleet leave the metrics too.
type fleetCollector struct{ g *Gateway }

var (
	inFlightDesc = prometheus.NewDesc("mcpfleet_replica_in_flight",
		"Requests being forwarded to each replica.", []string{"replica"}, nil)
	stateDesc = prometheus.NewDesc("mcpfleet_replica_state",
		"1 for each replica's health state (up, down, draining), 0 for the others.", []string{"replica", "state"}, nil)
)

func (c *fleetCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- inFlightDesc
	ch <- stateDesc
}

func (c *fleetCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.g.fleet.Snapshot()
	for i := range s.Len() {
		rep := s.At(i)
		ch <- prometheus.MustNewConstMetric(inFlightDesc, prometheus.GaugeValue, float64(s.InFlight(i)), rep.Name())
		for _, st := range []upstream.State{upstream.StateUp, upstream.StateDown, upstream.StateDraining} {
			v := 0.0
			if rep.State() == st {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(stateDesc, prometheus.GaugeValue, v, rep.Name(), st.String())
		}
	}
}

// HealthChanged counts a replica's health state change; pass it as
// upstream.CheckOptions.OnChange.
func (m *Metrics) HealthChanged(replica string, from, to upstream.State) {
	m.zeroReplica(replica)
	m.healthChanges.WithLabelValues(replica, from.String(), to.String()).Inc()
}

// toolsCollector reports each replica's tool-set digest and quarantine,
// read at scrape time.
type toolsCollector struct{ g *Gateway }

var (
	toolsDigestDesc = prometheus.NewDesc("mcpfleet_tools_digest_info",
		"1 for each replica's last listed tool set, by its digest (replicas that serve the same tools share a digest).", []string{"replica", "digest"}, nil)
	quarantinedDesc = prometheus.NewDesc("mcpfleet_replica_quarantined",
		"1 while a replica is quarantined because its tools break the lock (tools.on_unlocked: quarantine).", []string{"replica"}, nil)
	toolsChangedDesc = prometheus.NewDesc("mcpfleet_tools_unlocked",
		"Tools of each replica that differ from the lock (added or changed), or from most replicas' without a lock.", []string{"replica"}, nil)
)

func (c *toolsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- toolsDigestDesc
	ch <- quarantinedDesc
	ch <- toolsChangedDesc
}

func (c *toolsCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.g.fleet.Snapshot()
	for i := range s.Len() {
		rep := s.At(i)
		q := 0.0
		if rep.Quarantined() {
			q = 1
		}
		ch <- prometheus.MustNewConstMetric(quarantinedDesc, prometheus.GaugeValue, q, rep.Name())
	}
	w := c.g.tw
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for name, rt := range w.reps {
		if rt.set == nil {
			continue
		}
		ch <- prometheus.MustNewConstMetric(toolsDigestDesc, prometheus.GaugeValue, 1, name, rt.set.Digest())
		n := 0
		for _, chg := range rt.changes {
			if chg.Violation() {
				n++
			}
		}
		ch <- prometheus.MustNewConstMetric(toolsChangedDesc, prometheus.GaugeValue, float64(n), name)
	}
}

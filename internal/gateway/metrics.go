package gateway

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the gateway's Prometheus metrics, in a registry of their own
// (no global state: several gateways may run in one process). Labels carry
// method names from a fixed list, era, replica names and outcomes: never a
// credential, a session ID or anything else a client chooses.
type Metrics struct {
	reg           *prometheus.Registry
	requests      *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	streams       prometheus.Gauge
	keepAlives    prometheus.Counter
	retries       *prometheus.CounterVec
	sessionMisses *prometheus.CounterVec
}

func newMetrics(g *Gateway) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpfleet_requests_total",
			Help: "Requests by JSON-RPC method, protocol era, replica and outcome.",
		}, []string{"method", "era", "replica", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcpfleet_request_duration_seconds",
			Help:    "Time from request to the end of its answer (streams included).",
			Buckets: []float64{.001, .005, .01, .05, .1, .5, 1, 5, 15, 60, 300},
		}, []string{"method", "era"}),
		streams: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mcpfleet_open_streams",
			Help: "SSE streams being relayed now.",
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
	m.reg.MustRegister(m.requests, m.duration, m.streams, m.keepAlives, m.retries, m.sessionMisses,
		&fleetCollector{g: g},
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "mcpfleet_tasks",
			Help: "2026-07-28 tasks whose replica the gateway remembers.",
		}, func() float64 { return float64(g.tasks.Len()) }),
	)
	return m
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Registry returns the registry, so that the process can add its own
// collectors (Go runtime, process).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// fleetCollector reports per-replica gauges read from the current snapshot
// at scrape time, so replicas that leave the fleet leave the metrics too.
type fleetCollector struct{ g *Gateway }

var inFlightDesc = prometheus.NewDesc("mcpfleet_replica_in_flight",
	"Requests being forwarded to each replica.", []string{"replica"}, nil)

func (c *fleetCollector) Describe(ch chan<- *prometheus.Desc) { ch <- inFlightDesc }

func (c *fleetCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.g.fleet.Snapshot()
	for i := range s.Len() {
		ch <- prometheus.MustNewConstMetric(inFlightDesc, prometheus.GaugeValue,
			float64(s.InFlight(i)), s.At(i).Name())
	}
}

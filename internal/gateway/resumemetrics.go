package gateway

import "github.com/prometheus/client_golang/prometheus"

// streamMetrics count what the gateway keeps of legacy streams for a
// resume, and the resumes.
type streamMetrics struct {
	buffered    prometheus.Counter
	replayed    prometheus.Counter
	resumes     *prometheus.CounterVec
	storeErrors prometheus.Counter
}

func newStreamMetrics(g *Gateway) *streamMetrics {
	m := &streamMetrics{
		buffered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mcpfleet_stream_events_buffered_total",
			Help: "Events of legacy streams kept for a resume after their client went away.",
		}),
		replayed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mcpfleet_stream_events_replayed_total",
			Help: "Kept events sent to clients that resumed their stream.",
		}),
		resumes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpfleet_stream_resumes_total",
			Help: "GETs with Last-Event-ID by outcome: replayed (from the buffer), replica (the replica replays its own events), new_stream (a standalone stream nobody kept, opened anew), expired (410: not kept or expired), gone (410: its events dropped over the bound), invalid (400: the ID names no event of the session).",
		}, []string{"outcome"}),
		storeErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mcpfleet_stream_store_errors_total",
			Help: "Operations of the shared stream buffer that failed (events not kept).",
		}),
	}
	stat := func(name, help string, f func() float64, typ prometheus.ValueType) prometheus.Collector {
		if typ == prometheus.CounterValue {
			return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, f)
		}
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	g.metrics.reg.MustRegister(m.buffered, m.replayed, m.resumes, m.storeErrors,
		stat("mcpfleet_stream_buffer_bytes", "Bytes of legacy stream events this process keeps (streams being relayed, and the memory buffer).",
			func() float64 { return float64(g.recent.Stats().Bytes) }, prometheus.GaugeValue),
		stat("mcpfleet_stream_events_dropped_total", "Kept events dropped over resume.max_stream_bytes or resume.max_total_bytes (memory).",
			func() float64 { return float64(g.recent.Stats().Dropped) }, prometheus.CounterValue),
		stat("mcpfleet_stream_events_expired_total", "Kept events of streams that outlived resume.grace (memory).",
			func() float64 { return float64(g.recent.Stats().Expired) }, prometheus.CounterValue),
	)
	for _, o := range []string{"replayed", "replica", "new_stream", "expired", "gone", "invalid"} {
		m.resumes.WithLabelValues(o)
	}
	return m
}

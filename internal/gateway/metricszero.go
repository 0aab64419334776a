package gateway

// zeroSeries exports 0 for the label values known in advance of the
// counters that alert rules watch (deploy/prometheus/alerts.yaml), so that
// a gateway's first refusal or failure is an increase from 0 that rate()
// and increase() see, not a series that appears already at 1 and counts
// as nothing (Prometheus' instrumentation guide: "Avoid missing metrics").
// Label values that depend on traffic (replicas, methods) are left out.
func (m *Metrics) zeroSeries() {
	for _, r := range []string{"not_delivered", "draining", "delivered_safe"} {
		m.retries.WithLabelValues(r)
	}
	for _, o := range []string{"replayed", "waited", "unavailable", "key_reused"} {
		m.idempotency.WithLabelValues(o)
	}
	for _, r := range []string{"full", "queue_full", "timeout", "store"} {
		m.capacityRefused.WithLabelValues(r)
	}
	for _, a := range []string{"unkept", "refused"} {
		m.memoryShed.WithLabelValues(a)
	}
	for _, k := range []string{"session", "endpoint", "task"} {
		m.bindingRefused.WithLabelValues(k)
	}
}

package gateway

// zeroSeries exports 0 for the label values known in advance of the
// counters that alert rules watch (deploy/prometheus/alerts.yaml), so that
// a gateway's first refusal or failure is an increase from 0 that rate()
// and increase() see, not a series that appears already at 1 and counts
// as nothing (Prometheus' instrumentation guide: "Avoid missing metrics").
// Label values that depend on traffic (methods) are left out; a replica's
// series start at 0 when the gateway starts with it, or when its health
// first changes (zeroReplica).
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

// zeroReplica exports 0 for replica's series that an alert rule watches
// (mcpfleet_replica_lost_calls_total).
func (m *Metrics) zeroReplica(replica string) {
	m.replicaLost.WithLabelValues(replica)
}

package gateway

import "testing"

// TestAlertedCountersStartAtZero: before any request, a gateway exports 0
// for each reason of the counters alert rules watch, so that the first
// refusal is an increase rate() sees.
func TestAlertedCountersStartAtZero(t *testing.T) {
	f := startFleet(t, 1, nil)
	fams, err := f.gw.metrics.root.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]float64{}
	for _, fam := range fams {
		for _, m := range fam.GetMetric() {
			for _, l := range m.GetLabel() {
				if got[fam.GetName()] == nil {
					got[fam.GetName()] = map[string]float64{}
				}
				got[fam.GetName()][l.GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	for name, values := range map[string][]string{
		"mcpfleet_retries_total":                 {"not_delivered", "draining", "delivered_safe"},
		"mcpfleet_idempotency_total":             {"replayed", "waited", "unavailable", "key_reused"},
		"mcpfleet_capacity_refused_total":        {"full", "queue_full", "timeout", "store"},
		"mcpfleet_memory_shed_total":             {"unkept", "refused"},
		"mcpfleet_session_binding_refused_total": {"session", "endpoint", "task"},
	} {
		for _, v := range values {
			n, ok := got[name][v]
			if !ok || n != 0 {
				t.Errorf("%s{%q} = %v (exported: %v), want 0", name, v, n, ok)
			}
		}
	}
}

package sim

import "testing"

// BenchmarkDefaultScenario is one run of the lab's default ten minutes
// (goal: under 20 ms).
func BenchmarkDefaultScenario(b *testing.B) {
	s := Default()
	b.ReportAllocs()
	for b.Loop() {
		MustRun(s)
	}
}

// BenchmarkMillionCalls is one run of a million calls through the default
// fleet with every injection (goal: under 3 s).
func BenchmarkMillionCalls(b *testing.B) {
	s := Default()
	s.Protocol, s.Routing = Shared2025, Fleet
	s.SlowTools, s.Deploy = true, true
	s.Replicas = 4
	s.TrafficSeconds = 1_000_000 / s.ArrivalRate
	b.ReportAllocs()
	for b.Loop() {
		r := MustRun(s)
		b.ReportMetric(float64(r.Issued), "calls/op")
	}
}

package upstream

import (
	"testing"
	"time"
)

func TestHeldReplicaTakesNoNewWork(t *testing.T) {
	f, err := New([]Spec{{Name: "a", URL: "http://127.0.0.1:1/mcp"}, {Name: "b", URL: "http://127.0.0.1:2/mcp"}})
	if err != nil {
		t.Fatal(err)
	}
	s := f.Snapshot()
	a := s.Lookup("a")
	if !a.SetHeld(true) || a.SetHeld(true) {
		t.Fatal("SetHeld(true) must report a change once")
	}
	if s.Eligible(0) || !s.Eligible(1) {
		t.Fatalf("eligible a=%v b=%v, want only b", s.Eligible(0), s.Eligible(1))
	}
	if a.State() != StateUp {
		t.Fatalf("holding changed the health: %v", a.State())
	}
	// The hold outlives a membership update that keeps the replica.
	if _, err := f.Update([]Spec{{Name: "a", URL: "http://127.0.0.1:1/mcp"}, {Name: "c", URL: "http://127.0.0.1:3/mcp"}}); err != nil {
		t.Fatal(err)
	}
	if s2 := f.Snapshot(); s2.Lookup("a") != a || s2.Eligible(0) {
		t.Fatal("the held replica lost its hold in an update that kept it")
	}
	if !a.SetHeld(false) || !f.Snapshot().Eligible(0) {
		t.Fatal("resuming did not make the replica eligible")
	}
}

func TestStats(t *testing.T) {
	f, err := New([]Spec{{Name: "a", URL: "http://127.0.0.1:1/mcp"}})
	if err != nil {
		t.Fatal(err)
	}
	r := f.Snapshot().At(0)
	now := time.Now()
	for i := range 100 {
		r.Finished(now, time.Duration(i+1)*time.Millisecond, i%10 == 0)
	}
	r.Retried()
	r.StreamOpened()
	r.StreamOpened()
	r.StreamClosed()
	r.SawSession(now, "s1")
	r.SawSession(now, "s2")
	r.SawSession(now, "s1")
	st := r.Stats(now)
	if st.Requests != 100 || st.Errors != 10 || st.Retries != 1 || st.Streams != 1 || st.Sessions != 2 || st.LatencyN != 100 {
		t.Fatalf("stats %+v", st)
	}
	if st.P50 < 45*time.Millisecond || st.P50 > 55*time.Millisecond || st.P99 < 90*time.Millisecond || st.P99 > 110*time.Millisecond {
		t.Fatalf("p50 %v, p99 %v: want about 50 ms and 99 ms", st.P50, st.P99)
	}
}

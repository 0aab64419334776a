package upstream

import (
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestUpdateKeepsUnchangedReplicas(t *testing.T) {
	f, err := New([]Spec{
		{Name: "a", URL: "http://h:1/mcp"},
		{Name: "b", URL: "http://h:2/mcp"},
		{Name: "c", URL: "http://h:3/mcp"},
	})
	if err != nil {
		t.Fatal(err)
	}
	old := f.Snapshot()
	a, b, c := old.Lookup("a"), old.Lookup("b"), old.Lookup("c")
	a.Acquire()
	a.Acquire()
	b.Acquire()
	c.Acquire()
	setState(t, a, StateDraining)

	ch, err := f.Update([]Spec{
		{Name: "d", URL: "http://h:4/mcp"},
		{Name: "a", URL: "http://h:1/mcp"},
		{Name: "c", URL: "http://h:30/mcp"}, // same name, new URL: replaced
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Change{Added: []string{"d", "c"}, Removed: []string{"b", "c"}}, ch); diff != "" {
		t.Errorf("Change (-want +got):\n%s", diff)
	}
	s := f.Snapshot()
	if got := names(s); !cmp.Equal(got, []string{"d", "a", "c"}) {
		t.Errorf("names = %v, want [d a c]", got)
	}
	if s.Lookup("a") != a || a.InFlight() != 2 || a.State() != StateDraining {
		t.Errorf("a not kept: same=%v in-flight=%d state=%v", s.Lookup("a") == a, a.InFlight(), a.State())
	}
	if s.Lookup("b") != nil {
		t.Error("removed replica b is still in the fleet")
	}
	if nc := s.Lookup("c"); nc == c || nc.InFlight() != 0 || nc.URL().Host != "h:30" {
		t.Errorf("c not replaced: same=%v in-flight=%d host=%s", nc == c, nc.InFlight(), nc.URL().Host)
	}
	if d := s.Lookup("d"); d.State() != StateUp || !s.Eligible(0) {
		t.Errorf("new replica d is %v, want up and eligible", d.State())
	}
	// A request in flight on a removed replica releases it without harm,
	// and the old snapshot is intact for whoever still holds it.
	b.Release()
	if old.Len() != 3 || old.Lookup("b") != b || b.InFlight() != 0 {
		t.Error("old snapshot changed")
	}
}

func TestUpdateRejectsBadSpecs(t *testing.T) {
	f, err := New([]Spec{{Name: "a", URL: "http://h:1/mcp"}})
	if err != nil {
		t.Fatal(err)
	}
	before := f.Snapshot()
	for _, specs := range [][]Spec{
		nil,
		{{Name: "x", URL: "ftp://h/"}},
		{{Name: "x", URL: "http://h:1/"}, {Name: "x", URL: "http://h:2/"}},
	} {
		if _, err := f.Update(specs); err == nil {
			t.Errorf("Update(%v) = nil error", specs)
		}
	}
	if f.Snapshot() != before {
		t.Error("a failed Update changed the fleet")
	}
}

func TestUpdateNoChange(t *testing.T) {
	specs := []Spec{{Name: "a", URL: "http://h:1/mcp"}}
	f, err := New(specs)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := f.Update(specs)
	if err != nil || !ch.Empty() {
		t.Errorf("Update(same) = %+v, %v; want empty change", ch, err)
	}
}

// TestUpdateConcurrent is for -race: updates, readers and counters at once.
func TestUpdateConcurrent(t *testing.T) {
	f, err := New(fleetOf(3))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				if _, err := f.Update(fleetOf(1 + (i+w)%5)); err != nil {
					t.Error(err)
					return
				}
			}
		})
		wg.Go(func() {
			for range 1000 {
				s := f.Snapshot()
				for i := range s.Len() {
					r := s.At(i)
					r.Acquire()
					_ = s.Eligible(i)
					_ = s.Lookup(r.Name())
					r.Release()
				}
			}
		})
	}
	wg.Wait()
	s := f.Snapshot()
	for i := range s.Len() {
		if n := s.InFlight(i); n != 0 {
			t.Errorf("replica %s in flight %d after all released", s.At(i).Name(), n)
		}
	}
}

func fleetOf(n int) []Spec {
	specs := make([]Spec, n)
	for i := range specs {
		specs[i] = Spec{URL: fmt.Sprintf("http://h:%d/mcp", i+1)}
	}
	return specs
}

func names(s *Snapshot) []string {
	var out []string
	for i := range s.Len() {
		out = append(out, s.At(i).Name())
	}
	return out
}

// setState forces r's state, as checks would have.
func setState(t *testing.T, r *Replica, st State) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status = Status{State: st}
	r.state.Store(int32(st))
}

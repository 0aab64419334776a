package upstream

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestRecentKeepsTheLastNewestFirst: fewer than RecentLen values come back
// newest first; past RecentLen the oldest go.
func TestRecentKeepsTheLastNewestFirst(t *testing.T) {
	var q recent[int]
	if got := q.newestFirst(); len(got) != 0 {
		t.Fatalf("empty: %v", got)
	}
	for i := 1; i <= 3; i++ {
		q.add(i)
	}
	if got := q.newestFirst(); !cmp.Equal(got, []int{3, 2, 1}) {
		t.Fatalf("after 1, 2, 3: %v", got)
	}
	for i := 4; i <= RecentLen+4; i++ {
		q.add(i)
	}
	want := make([]int, 0, RecentLen)
	for i := RecentLen + 4; i > 4; i-- {
		want = append(want, i)
	}
	if got := q.newestFirst(); !cmp.Equal(got, want) {
		t.Fatalf("after 1 to %d: %v, want %v", RecentLen+4, got, want)
	}
}

// TestRecentChecksAndConnectFailures: every check is kept with its reason,
// the last one first and equal to LastCheck; a connect failure is kept
// among the recent failures.
func TestRecentChecksAndConnectFailures(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if fail.Load() {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	f, err := New([]Spec{{Name: "a", URL: srv.URL + "/mcp"}})
	if err != nil {
		t.Fatal(err)
	}
	// Mode http: the replica has a health endpoint and nothing else.
	c, err := NewChecker(f, &CheckOptions{Interval: time.Hour, Timeout: time.Second, Mode: CheckHTTP})
	if err != nil {
		t.Fatal(err)
	}
	r := f.Snapshot().Lookup("a")
	c.Check(context.Background())
	fail.Store(false)
	c.Check(context.Background())
	got := r.RecentChecks()
	if len(got) != 2 || got[0].Result != ResultOK || got[1].Result != ResultFail || got[1].Reason == "" {
		t.Fatalf("recent checks %+v: want ok then a failure with its reason", got)
	}
	if last := r.LastCheck(); last == nil || *last != got[0] {
		t.Fatalf("LastCheck %+v is not the newest of %+v", last, got)
	}
	if fs := r.RecentFailures(); len(fs) != 0 {
		t.Fatalf("failures before any request: %+v", fs)
	}
	r.ReportConnectFailure()
	if fs := r.RecentFailures(); len(fs) != 1 || fs[0].Outcome != OutcomeConnect || fs[0].At.IsZero() {
		t.Fatalf("after a connect failure: %+v", fs)
	}
}

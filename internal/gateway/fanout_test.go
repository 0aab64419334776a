package gateway

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestListenHearsEveryReplica: a 2026-07-28 client's subscriptions/listen
// stream hears a tool-list change on whichever replica it happens, because
// the gateway listens on all of them; the acknowledgement arrives once.
func TestListenHearsEveryReplica(t *testing.T) {
	f := startFleet(t, 3, nil)
	changed := make(chan struct{}, 16)
	cs := connect(t, f.url(), "", &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			changed <- struct{}{}
		},
	})
	// The legs open asynchronously, so a change made before a replica's
	// leg subscribed goes unheard: each replica changes its list every
	// 200 ms until the client hears it.
	for i, s := range f.servers {
		heard := false
		for try := 0; try < 25 && !heard; try++ {
			s.AddTool(fmt.Sprintf("added-%d-%d", i, try))
			select {
			case <-changed:
				heard = true
			case <-time.After(200 * time.Millisecond):
			}
		}
		if !heard {
			t.Fatalf("tools/list_changed from replica %d never arrived; logs:\n%s", i, f.logs.String())
		}
	}
	if got := inFlight(f); got != 3 {
		t.Errorf("listen legs open on %d replicas, want 3", got)
	}
	cs.Close()
	deadline := time.Now().Add(5 * time.Second)
	for inFlight(f) != 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := inFlight(f); got != 0 {
		t.Errorf("%d legs still open after the client closed", got)
	}
}

// inFlight sums the fleet's in-flight counts.
func inFlight(f *fleet) int64 {
	s := f.gw.fleet.Snapshot()
	var n int64
	for i := range s.Len() {
		n += s.InFlight(i)
	}
	return n
}

func TestIsDuplicate(t *testing.T) {
	t0 := time.Unix(100, 0)
	seen := map[uint64]time.Time{}
	steps := []struct {
		digest uint64
		at     time.Duration
		dup    bool
	}{
		{1, 0, false},
		{1, 500 * time.Millisecond, true},
		{2, 600 * time.Millisecond, false},
		{1, 1500 * time.Millisecond, false}, // the first sighting is over a second old
	}
	for i, s := range steps {
		if got := isDuplicate(seen, s.digest, t0.Add(s.at)); got != s.dup {
			t.Errorf("step %d: isDuplicate = %v, want %v", i, got, s.dup)
		}
	}
}

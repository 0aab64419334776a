package testserver

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// waitLoad waits until s runs running tool calls and queues queued.
func waitLoad(t *testing.T, s *Server, running, queued int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if r, q := s.Load(); r == running && q == queued {
			return
		}
	}
	r, q := s.Load()
	t.Fatalf("load is %d running, %d queued; want %d, %d", r, q, running, queued)
}

// TestSlotsGrantInOrder checks the slots alone: the oldest waiter gets the
// first free slot, a cancelled waiter leaves the queue, and a waiter granted
// as its context ends hands its slot on.
func TestSlotsGrantInOrder(t *testing.T) {
	l := &slots{n: 1}
	if err := l.acquire(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := make(chan int, 3)
	cancelled, cancel := context.WithCancel(t.Context())
	for i := range 3 {
		ctx := t.Context()
		if i == 1 {
			ctx = cancelled
		}
		go func() {
			if l.acquire(ctx) == nil {
				got <- i
			}
		}()
		for _, q := l.load(); q != i+1; _, q = l.load() {
			time.Sleep(time.Millisecond) // waiting for goroutine i to queue
		}
	}
	cancel()
	for _, q := l.load(); q != 2; _, q = l.load() {
		time.Sleep(time.Millisecond) // waiting for waiter 1 to leave
	}
	l.release()
	if i := <-got; i != 0 {
		t.Fatalf("first slot went to waiter %d, want 0", i)
	}
	l.release()
	if i := <-got; i != 2 {
		t.Fatalf("second slot went to waiter %d, want 2 (1 was cancelled)", i)
	}
	if n := l.close(); n != 1 {
		t.Errorf("close = %d running, want 1", n)
	}
	if err := l.acquire(t.Context()); !errors.Is(err, errStopped) {
		t.Errorf("acquire after close = %v, want errStopped", err)
	}
	l.release()
	if r, q := l.load(); r != 0 || q != 0 {
		t.Errorf("load after the last release = %d, %d; want 0, 0", r, q)
	}
}

// TestSlotsBoundConcurrentCalls runs N+k concurrent sleeps against a server
// with N slots, in both eras: at most N run at once, /health shows the
// others queued, and all of them finish.
func TestSlotsBoundConcurrentCalls(t *testing.T) {
	const n, k = 2, 3
	for _, version := range []string{legacyVersion, modernVersion} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			calls := &Gauge{}
			s, base := startWith(t, "replica-s", &Options{Slots: n, Calls: calls})
			cs := connect(t, t.Context(), base, version, nil)
			var done []<-chan error
			for range n + k {
				done = append(done, callAsync(cs, "sleep", map[string]any{"seconds": 0.3}))
			}
			waitLoad(t, s, n, k)
			want := healthOK
			want.Body = fmt.Sprintf("{\"status\":\"ok\",\"running\":%d,\"queued\":%d}\n", n, k)
			if diff := cmp.Diff(want, get(t, "GET", base+"/health")); diff != "" {
				t.Errorf("/health with the slots full (-want +got):\n%s", diff)
			}
			for i, d := range done {
				if err := <-d; err != nil {
					t.Errorf("sleep %d: %v", i, err)
				}
			}
			if got := calls.Peak("sleep"); got != n {
				t.Errorf("%d sleeps ran at once, want %d", got, n)
			}
			waitLoad(t, s, 0, 0)
		})
	}
}

// TestSlotsDrainInOrder queues calls one after the other behind one slot
// and checks from the ledger that they ran in the order they came.
func TestSlotsDrainInOrder(t *testing.T) {
	ledger := &syncBuffer{}
	s, base := startWith(t, "replica-o", &Options{Slots: 1, Ledger: ledger})
	cs := connect(t, t.Context(), base, legacyVersion, nil)
	var done []<-chan error
	var want []string
	for i := range 4 {
		key := "k" + strconv.Itoa(i)
		want = append(want, key)
		seconds := 0.05
		if i == 0 {
			seconds = 0.5 // long enough to queue the others behind it
		}
		done = append(done, callAsync(cs, "mutate", map[string]any{"key": key, "seconds": seconds, "at": 0}))
		waitLoad(t, s, 1, i) // call i is in: running, or queued behind the others
	}
	for i, d := range done {
		if err := <-d; err != nil {
			t.Fatalf("mutate %d: %v", i, err)
		}
	}
	var got []string
	for line := range strings.Lines(ledger.String()) {
		key, _, _ := strings.Cut(line, " ")
		got = append(got, strings.Trim(key, `"`))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mutations in order (-want +got):\n%s", diff)
	}
}

// TestSlotsCancelledWaiterNeverRuns cancels a call waiting for the only
// slot, in both eras and served stateless: it leaves the queue at once and
// never runs, so the mutation it would have made at its start is not made.
func TestSlotsCancelledWaiterNeverRuns(t *testing.T) {
	tests := []struct {
		name      string
		version   string
		stateless bool
	}{
		{"legacy", legacyVersion, false},
		{"modern", modernVersion, false},
		{"legacy stateless", legacyVersion, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			calls := &Gauge{}
			s, base := startWith(t, "replica-c", &Options{Slots: 1, Calls: calls, Stateless: tt.stateless})
			cs := connect(t, t.Context(), base, tt.version, nil)
			busy := callAsync(cs, "sleep", map[string]any{"seconds": 1})
			waitLoad(t, s, 1, 0)

			ctx, cancel := context.WithCancel(t.Context())
			waiting := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mutate", Arguments: map[string]any{"key": "never", "at": 0}})
				waiting <- err
			}()
			waitLoad(t, s, 1, 1)
			cancel()
			if err := <-waiting; err == nil {
				t.Error("cancelled mutate succeeded")
			}
			waitLoad(t, s, 1, 0) // left the queue while the sleep still runs
			if err := <-busy; err != nil {
				t.Fatalf("sleep: %v", err)
			}
			waitLoad(t, s, 0, 0)
			if got := callText(t, t.Context(), cs, "count", map[string]any{"key": "never"}); got != "0" {
				t.Errorf("count of the cancelled mutation = %s, want 0", got)
			}
			if got := calls.Started("mutate"); got != 0 {
				t.Errorf("mutate started %d times, want 0", got)
			}
		})
	}
}

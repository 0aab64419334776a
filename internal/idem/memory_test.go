package idem

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// fakeClock is a clock that moves only when told to.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time // guarded by mu
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestMemoryContract(t *testing.T) {
	testStore(t, func(t *testing.T) harness {
		clock := newFakeClock()
		const maxResult = 4 << 10
		return harness{
			store:     NewMemory(&MemoryOptions{Now: clock.Now, MaxResult: maxResult}),
			advance:   clock.Advance,
			short:     time.Second,
			maxResult: maxResult,
		}
	})
}

// complete claims and completes key with result, failing the test on error.
func complete(t *testing.T, s Store, key, result string, ttl time.Duration) {
	t.Helper()
	out := claim(t, s, key, long, Claimed)
	if err := s.Complete(context.Background(), key, out.Token, []byte(result), ttl); err != nil {
		t.Fatalf("Complete(%q): %v", key, err)
	}
}

func TestMemoryEvictsExpiredFirstThenSoonestDone(t *testing.T) {
	clock := newFakeClock()
	m := NewMemory(&MemoryOptions{Now: clock.Now, MaxRecords: 3})
	complete(t, m, "short", "s", time.Second)
	complete(t, m, "later", "l", time.Hour)
	claim(t, m, "running", time.Hour, Claimed)
	clock.Advance(2 * time.Second)

	claim(t, m, "new1", time.Hour, Claimed) // evicts "short", which has expired
	claim(t, m, "later", long, Done)
	claim(t, m, "new2", time.Hour, Claimed) // evicts "later", the only done record
	got, err := m.Wait(context.Background(), "later", dg)
	checkOutcome(t, "Wait for the evicted record", got, Outcome{State: Released}, err) // the cap's cost
	if got := m.Len(); got != 3 {
		t.Errorf("Len = %d, want 3", got)
	}
	claim(t, m, "running", long, Running) // running claims are never evicted

	_, err = m.Claim(context.Background(), "one-too-many", dg, time.Hour, Refuse)
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("Claim with every record running = %v, want ErrUnavailable", err)
	}
	clock.Advance(2 * time.Hour)
	claim(t, m, "one-too-many", time.Hour, Claimed) // leases ran out, room again
}

func TestMemoryMaxBytesEvictsSoonestDone(t *testing.T) {
	clock := newFakeClock()
	m := NewMemory(&MemoryOptions{Now: clock.Now, MaxResult: 4, MaxBytes: 8})
	complete(t, m, "a", "aaaa", time.Minute)
	complete(t, m, "b", "bbbb", time.Hour)
	complete(t, m, "c", "cccc", time.Hour) // over 8 bytes: "a" expires soonest and goes
	claim(t, m, "a", long, Claimed)
	claim(t, m, "b", long, Done)
	claim(t, m, "c", long, Done)
}

func TestMemoryWaitWakesWhenLeaseRunsOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewMemory(nil) // real clock, faked by the bubble
		claim(t, m, "k", 30*time.Second, Claimed)
		start := time.Now()
		got, err := m.Wait(context.Background(), "k", dg)
		checkOutcome(t, "Wait", got, Outcome{State: Released}, err)
		if waited := time.Since(start); waited != 30*time.Second {
			t.Errorf("Wait returned after %v, want the 30s lease", waited)
		}
	})
}

func TestMemoryWaitWakesOnCompleteAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewMemory(nil)
		out := claim(t, m, "k", time.Hour, Claimed)
		go func() {
			time.Sleep(time.Second)
			if err := m.Complete(context.Background(), "k", out.Token, []byte("r"), time.Hour); err != nil {
				t.Errorf("Complete: %v", err)
			}
		}()
		start := time.Now()
		got, err := m.Wait(context.Background(), "k", dg)
		checkOutcome(t, "Wait", got, Outcome{State: Done, Result: []byte("r")}, err)
		if waited := time.Since(start); waited != time.Second {
			t.Errorf("Wait returned after %v, want 1s", waited)
		}
	})
}

func TestMemoryResultIsCopied(t *testing.T) {
	m := NewMemory(nil)
	out := claim(t, m, "k", long, Claimed)
	buf := []byte("result")
	if err := m.Complete(context.Background(), "k", out.Token, buf, long); err != nil {
		t.Fatal(err)
	}
	buf[0] = 'X'
	got := claim(t, m, "k", long, Done)
	got.Result[1] = 'Y'
	checkOutcome(t, "Claim", claim(t, m, "k", long, Done), Outcome{State: Done, Result: []byte("result")}, nil)
}

func TestMemoryOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		opts *MemoryOptions
		ok   bool
	}{
		{"nil", nil, true},
		{"zero", &MemoryOptions{}, true},
		{"negative records", &MemoryOptions{MaxRecords: -1}, false},
		{"negative result", &MemoryOptions{MaxResult: -1}, false},
		{"bytes below result", &MemoryOptions{MaxResult: 10, MaxBytes: 5}, false},
		{"default bytes below result", &MemoryOptions{MaxResult: DefaultMaxBytes + 1}, false},
		{"bytes equal result", &MemoryOptions{MaxResult: 10, MaxBytes: 10}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.opts.Validate(); (err == nil) != tt.ok {
				t.Errorf("Validate = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestDigest(t *testing.T) {
	seen := map[string]string{}
	for _, p := range [][2]string{{"ab", "c"}, {"a", "bc"}, {"", "abc"}, {"abc", ""}, {"ab", "c"}} {
		d := Digest(p[0], p[1])
		if len(d) != 64 {
			t.Errorf("Digest(%q, %q) = %q, want 64 hex digits", p[0], p[1], d)
		}
		id := strconv.Quote(p[0]) + "," + strconv.Quote(p[1])
		if prev, ok := seen[d]; ok && prev != id {
			t.Errorf("Digest collides for %s and %s", prev, id)
		}
		seen[d] = id
	}
	if len(seen) != 4 {
		t.Errorf("got %d distinct digests, want 4", len(seen))
	}
}

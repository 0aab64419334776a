package limit_test

import (
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/limit"
	"github.com/mcpfleet/mcpfleet/internal/limit/limittest"
)

// fakeClock is a clock that moves only when told.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.mu.Unlock()
}

func TestMemoryContract(t *testing.T) {
	limittest.Run(t, func(t *testing.T) limittest.Harness {
		clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
		return limittest.Harness{Store: limit.NewMemoryAt(0, clock.Now), Advance: clock.Advance}
	})
}

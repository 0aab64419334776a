package limit

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Unix(1_700_000_000, 0)

func TestDecide(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name string
		c    Check
		st   State
		now  time.Time
		want Decision
	}{
		{
			name: "no limits allow everything",
			now:  t0,
			want: Decision{Allowed: true, Bucket: Bucket{At: t0}},
		},
		{
			name: "a new bucket is full",
			c:    Check{Rate: 5, Burst: 5},
			now:  t0,
			want: Decision{Allowed: true, Limit: 5, Remaining: 4, Bucket: Bucket{Tokens: 4, At: t0}},
		},
		{
			name: "an empty bucket refuses until one token is back",
			c:    Check{Rate: 5, Burst: 5},
			st:   State{Bucket: Bucket{Tokens: 0.5, At: t0}},
			now:  t0,
			want: Decision{Reason: ReasonRate, RetryAfter: 100 * ms, Limit: 5, Bucket: Bucket{Tokens: 0.5, At: t0}},
		},
		{
			name: "refill is rate times elapsed",
			c:    Check{Rate: 5, Burst: 5},
			st:   State{Bucket: Bucket{Tokens: 0, At: t0}},
			now:  t0.Add(300 * ms),
			want: Decision{Allowed: true, Limit: 5, Remaining: 0, Bucket: Bucket{Tokens: 0.5, At: t0.Add(300 * ms)}},
		},
		{
			name: "refill stops at the burst",
			c:    Check{Rate: 5, Burst: 2},
			st:   State{Bucket: Bucket{Tokens: 0, At: t0}},
			now:  t0.Add(time.Hour),
			want: Decision{Allowed: true, Limit: 2, Remaining: 1, Bucket: Bucket{Tokens: 1, At: t0.Add(time.Hour)}},
		},
		{
			name: "a clock that goes back refills nothing",
			c:    Check{Rate: 5, Burst: 5},
			st:   State{Bucket: Bucket{Tokens: 0.2, At: t0}},
			now:  t0.Add(-time.Second),
			want: Decision{Reason: ReasonRate, RetryAfter: 160 * ms, Limit: 5, Bucket: Bucket{Tokens: 0.2, At: t0.Add(-time.Second)}},
		},
		{
			name: "concurrency full refuses with the busy hint",
			c:    Check{Concurrency: 2, LeaseTTL: time.Minute},
			st:   State{Caller: Leases{Live: 2, Earliest: t0.Add(time.Minute)}},
			now:  t0,
			want: Decision{Reason: ReasonConcurrency, RetryAfter: BusyRetry, Limit: 2, Bucket: Bucket{At: t0}},
		},
		{
			name: "a lease about to lapse shortens the hint",
			c:    Check{Concurrency: 1, LeaseTTL: time.Minute},
			st:   State{Caller: Leases{Live: 1, Earliest: t0.Add(40*ms + 100)}},
			now:  t0,
			want: Decision{Reason: ReasonConcurrency, RetryAfter: 41 * ms, Limit: 1, Bucket: Bucket{At: t0}},
		},
		{
			name: "tool cap full",
			c:    Check{ToolCap: 3, LeaseTTL: time.Minute},
			st:   State{Tool: Leases{Live: 3, Earliest: t0.Add(time.Minute)}},
			now:  t0,
			want: Decision{Reason: ReasonTool, RetryAfter: BusyRetry, Limit: 3, Bucket: Bucket{At: t0}},
		},
		{
			name: "a refusal consumes no token",
			c:    Check{Rate: 1, Burst: 2, Concurrency: 1, LeaseTTL: time.Minute},
			st:   State{Bucket: Bucket{Tokens: 1.5, At: t0}, Caller: Leases{Live: 1, Earliest: t0.Add(time.Minute)}},
			now:  t0,
			want: Decision{Reason: ReasonConcurrency, RetryAfter: BusyRetry, Limit: 1, Bucket: Bucket{Tokens: 1.5, At: t0}},
		},
		{
			name: "the longest wait names the reason",
			c:    Check{Rate: 1, Burst: 1, Concurrency: 1, LeaseTTL: time.Minute},
			st:   State{Bucket: Bucket{Tokens: 0, At: t0}, Caller: Leases{Live: 1, Earliest: t0.Add(time.Minute)}},
			now:  t0,
			want: Decision{Reason: ReasonRate, RetryAfter: time.Second, Limit: 1, Bucket: Bucket{Tokens: 0, At: t0}},
		},
		{
			name: "room under every limit",
			c:    Check{Rate: 1, Burst: 3, Concurrency: 2, ToolCap: 2, LeaseTTL: time.Minute},
			st:   State{Bucket: Bucket{Tokens: 3, At: t0}, Caller: Leases{Live: 1}, Tool: Leases{Live: 1}},
			now:  t0,
			want: Decision{Allowed: true, Limit: 3, Remaining: 2, Bucket: Bucket{Tokens: 2, At: t0}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.c.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			got := Decide(tt.c, tt.st, tt.now)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckValidate(t *testing.T) {
	bad := []Check{
		{Rate: -1, Burst: 1},
		{Rate: 1, Burst: 0.5},
		{Concurrency: -1},
		{Concurrency: 1},
		{ToolCap: 1, LeaseTTL: -time.Second},
	}
	for _, c := range bad {
		if c.Validate() == nil {
			t.Errorf("Validate(%+v) = nil, want an error", c)
		}
	}
}

func TestTableForgetsOnlyIdleCallers(t *testing.T) {
	tab := NewTable(2)
	c := Check{Rate: 1, Burst: 1, Concurrency: 1, LeaseTTL: time.Minute}
	if d, id := tab.Acquire("a", "", c, t0); !d.Allowed || id == 0 {
		t.Fatalf("a: %+v, lease %d", d, id)
	}
	if d, _ := tab.Acquire("b", "", Check{Rate: 1, Burst: 1}, t0); !d.Allowed {
		t.Fatalf("b: %+v", d)
	}
	// Full: c takes b's place (b holds no lease), never a's.
	if d, _ := tab.Acquire("c", "", Check{Rate: 1, Burst: 1}, t0); !d.Allowed {
		t.Fatalf("c: %+v", d)
	}
	if n := tab.Callers(); n != 2 {
		t.Fatalf("callers = %d, want 2", n)
	}
	if d, _ := tab.Acquire("a", "", c, t0); d.Allowed {
		t.Fatalf("a forgotten: a second call was allowed: %+v", d)
	}
}

func TestTableReleaseAndExpiry(t *testing.T) {
	tab := NewTable(0)
	c := Check{Concurrency: 1, ToolCap: 1, LeaseTTL: time.Second}
	d, id := tab.Acquire("a", "work", c, t0)
	if !d.Allowed {
		t.Fatalf("first: %+v", d)
	}
	if d, _ := tab.Acquire("b", "work", c, t0); d.Reason != ReasonTool {
		t.Fatalf("b under a full tool cap: %+v", d)
	}
	tab.Renew("a", "work", id, time.Second, t0.Add(900*time.Millisecond))
	if d, _ := tab.Acquire("b", "work", c, t0.Add(1500*time.Millisecond)); d.Allowed {
		t.Fatalf("renewed lease ignored: %+v", d)
	}
	if d, _ := tab.Acquire("b", "work", c, t0.Add(2*time.Second)); !d.Allowed {
		t.Fatalf("lapsed lease still counted: %+v", d)
	}
	tab.Release("a", "work", id)
	tab.Renew("a", "work", id, time.Minute, t0.Add(2*time.Second)) // crosses the release
	if d, _ := tab.Acquire("a", "other", c, t0.Add(2*time.Second)); !d.Allowed {
		t.Fatalf("a renewal after release took the slot again: %+v", d)
	}
}

func TestDecideBatch(t *testing.T) {
	ms := time.Millisecond
	busy := Leases{Live: 1, Earliest: t0.Add(100 * ms)}
	tests := []struct {
		name  string
		c     Check
		calls int
		st    State
		tools []ToolWant
		want  Decision
	}{
		{
			name: "a token for each call", c: Check{Rate: 1, Burst: 5}, calls: 3,
			want: Decision{Allowed: true, Limit: 5, Remaining: 2, Bucket: Bucket{Tokens: 2, At: t0}},
		},
		{
			name: "too few tokens refuse the batch and wait for all of them", c: Check{Rate: 2, Burst: 5}, calls: 3,
			st:   State{Bucket: Bucket{Tokens: 2, At: t0}},
			want: Decision{Reason: ReasonRate, RetryAfter: 500 * ms, Limit: 5, Bucket: Bucket{Tokens: 2, At: t0}},
		},
		{
			name: "more calls than the burst never fit", c: Check{Rate: 1, Burst: 2}, calls: 3,
			want: Decision{Reason: ReasonRate, RetryAfter: time.Second, Limit: 2, Bucket: Bucket{Tokens: 2, At: t0}},
		},
		{
			name: "a slot for each call", c: Check{Concurrency: 3, LeaseTTL: time.Second}, calls: 3,
			st:   State{Caller: busy},
			want: Decision{Reason: ReasonConcurrency, RetryAfter: 100 * ms, Limit: 3, Bucket: Bucket{At: t0}},
		},
		{
			name: "each tool's calls under its own cap", c: Check{LeaseTTL: time.Second}, calls: 3,
			tools: []ToolWant{{Cap: 2, Calls: 1, Leases: busy}, {Cap: 2, Calls: 2, Leases: busy}},
			want:  Decision{Reason: ReasonTool, RetryAfter: 100 * ms, Limit: 2, Bucket: Bucket{At: t0}},
		},
		{
			name: "room for every call", c: Check{Concurrency: 4, LeaseTTL: time.Second}, calls: 3,
			st: State{Caller: busy}, tools: []ToolWant{{Cap: 2, Calls: 1, Leases: busy}, {Cap: 2, Calls: 2}},
			want: Decision{Allowed: true, Bucket: Bucket{At: t0}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DecideBatch(tt.c, tt.calls, tt.st, tt.tools, t0)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("DecideBatch (-want +got):\n%s", diff)
			}
		})
	}
}

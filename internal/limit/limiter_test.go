package limit

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// downStore is a store whose server never answers.
type downStore struct{}

func (downStore) Acquire(context.Context, string, string, Check) (Decision, Lease, error) {
	return Decision{}, Lease{}, fmt.Errorf("deciding: %w: connection refused", ErrUnavailable)
}
func (downStore) AcquireBatch(context.Context, string, []Call, Check) (Decision, []Lease, error) {
	return Decision{}, nil, fmt.Errorf("deciding: %w: connection refused", ErrUnavailable)
}
func (downStore) Renew(context.Context, []Lease, Check) error { return ErrUnavailable }
func (downStore) Release(context.Context, Lease) error        { return ErrUnavailable }

func TestLimiterGoverns(t *testing.T) {
	tests := []struct {
		opts         Options
		method, tool string
		want         bool
	}{
		{Options{Rate: 1}, "tools/call", "x", true},
		{Options{Rate: 1}, "tools/list", "", false},
		{Options{Rate: 1, Methods: []string{"tools/call", "resources/read"}}, "resources/read", "", true},
		{Options{Tools: map[string]int{"work": 3}}, "tools/call", "work", true},
		{Options{Tools: map[string]int{"work": 3}}, "tools/call", "other", false},
		{Options{}, "tools/call", "x", false},
	}
	for _, tt := range tests {
		l := NewLimiter(NewMemory(0), &tt.opts)
		if got := l.Governs(tt.method, tt.tool); got != tt.want {
			t.Errorf("%+v Governs(%s, %s) = %v, want %v", tt.opts, tt.method, tt.tool, got, tt.want)
		}
		l.Close()
		l.Close()
	}
}

func TestLimiterFailOpen(t *testing.T) {
	l := NewLimiter(downStore{}, &Options{Rate: 1})
	defer l.Close()
	for range 3 {
		a := l.Admit(context.Background(), "a", "tools/call", "x")
		if !a.Allowed || !errors.Is(a.StoreErr, ErrUnavailable) {
			t.Fatalf("fail open: %+v", a)
		}
		a.Done()
	}
}

func TestLimiterFailClosed(t *testing.T) {
	l := NewLimiter(downStore{}, &Options{Rate: 1, FailClosed: true})
	defer l.Close()
	a := l.Admit(context.Background(), "a", "tools/call", "x")
	if a.Allowed || a.StoreErr == nil || a.RetryAfter != DefaultStoreRetry {
		t.Fatalf("fail closed: %+v", a)
	}
}

func TestLimiterRenewsUntilDone(t *testing.T) {
	// Renewals every 500 ms: one may stall a second on a loaded machine
	// under the race detector before the lease lapses.
	l := NewLimiter(NewMemory(0), &Options{Concurrency: 1, LeaseTTL: 1500 * time.Millisecond})
	defer l.Close()
	ctx := context.Background()
	a := l.Admit(ctx, "a", "tools/call", "x")
	if !a.Allowed || l.Held() != 1 {
		t.Fatalf("first: %+v, held %d", a.Decision, l.Held())
	}
	time.Sleep(3200 * time.Millisecond) // over two lease lifetimes: only renewals keep it
	if b := l.Admit(ctx, "a", "tools/call", "x"); b.Allowed {
		t.Fatal("a running call's lease lapsed while it was renewed")
	}
	a.Done()
	a.Done()
	if l.Held() != 0 {
		t.Fatalf("held %d after Done, want 0", l.Held())
	}
	b := l.Admit(ctx, "a", "tools/call", "x")
	if !b.Allowed {
		t.Fatalf("after Done: %+v", b.Decision)
	}
	b.Done()
}

func TestLimiterBatchSessionsAddress(t *testing.T) {
	ctx := context.Background()
	l := NewLimiter(NewMemory(0), &Options{Rate: 0.01, Burst: 2, Concurrency: 4, Tools: map[string]int{"slow": 1}, Sessions: 10, PerAddress: 1})
	defer l.Close()
	call := func(tool string) BatchCall { return BatchCall{Method: "tools/call", Tool: tool} }
	if a := l.AdmitBatch(ctx, "a", []BatchCall{{Method: "ping"}, {Method: "tools/list"}}); a != nil {
		t.Fatalf("a batch of ungoverned requests: %+v, want nil", a.Decision)
	}
	if a := l.AdmitBatch(ctx, "a", []BatchCall{{Method: "ping"}, call("x"), call("x"), call("x")}); a.Allowed {
		t.Fatal("3 calls with a burst of 2 allowed")
	}
	if a := l.AdmitBatch(ctx, "b", []BatchCall{call("slow"), call("slow")}); a.Allowed || a.Reason != ReasonTool {
		t.Fatalf("2 calls of a tool capped at 1: %+v, want refused by the cap", a.Decision)
	}
	a := l.AdmitBatch(ctx, "a", []BatchCall{{Method: "ping"}, call("x"), call("slow")})
	if !a.Allowed || l.Held() != 1 || len(a.more) != 1 {
		t.Fatalf("2 calls with 2 tokens: %+v, held %d, leases %d, want allowed holding 2 leases", a.Decision, l.Held(), 1+len(a.more))
	}
	if b := l.Admit(ctx, "c", "tools/call", "slow"); b.Allowed {
		t.Fatal("the capped tool's place was not held by the batch")
	}
	a.Done()
	if b := l.Admit(ctx, "c", "tools/call", "slow"); !b.Allowed {
		t.Fatalf("after the batch ended: %+v, want allowed", b.Decision)
	}
	count := func(admit func() *Admission, n int) (allowed int) {
		for range n {
			if admit().Allowed {
				allowed++
			}
		}
		return allowed
	}
	if got := count(func() *Admission { return l.AdmitSession(ctx, "a") }, 50); got != 10 {
		t.Errorf("50 sessions with a limit of 10 a minute: %d allowed, want 10", got)
	}
	if got := count(func() *Admission { return l.AdmitAddress(ctx, "addr", 1) }, 8); got != 1 {
		t.Errorf("8 calls from one address at 1 a second: %d allowed, want 1", got)
	}
	off := NewLimiter(NewMemory(0), &Options{Rate: 1})
	defer off.Close()
	if off.AdmitSession(ctx, "a") != nil || off.AdmitAddress(ctx, "addr", 1) != nil {
		t.Error("sessions or addresses limited when Options leave them 0")
	}
}

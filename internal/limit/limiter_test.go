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

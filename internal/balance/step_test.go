package balance

import "testing"

func TestStep(t *testing.T) {
	tests := []struct {
		name string
		a    Attempt
		want Verdict
	}{
		{"not delivered moves on", Attempt{Outcome: NotDelivered, MaxRetries: 1}, MoveOn},
		{"refused draining moves on", Attempt{Outcome: RefusedDraining, MaxRetries: 1}, MoveOn},
		{"delivered and unsafe is never resent", Attempt{Outcome: Delivered, MaxRetries: 1}, FailAfterDelivery},
		{"delivered and safe moves on", Attempt{Outcome: Delivered, Safe: true, MaxRetries: 1}, MoveOn},
		{"not delivered past the bound is unreachable", Attempt{Outcome: NotDelivered, Retries: 1, MaxRetries: 1}, FailUnreachable},
		{"draining past the bound is unreachable", Attempt{Outcome: RefusedDraining, Retries: 2, MaxRetries: 2}, FailUnreachable},
		{"delivered and safe past the bound fails after delivery", Attempt{Outcome: Delivered, Safe: true, Retries: 1, MaxRetries: 1}, FailAfterDelivery},
		{"no retries at all", Attempt{Outcome: NotDelivered}, FailUnreachable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Step(tt.a); got != tt.want {
				t.Errorf("Step(%+v) = %v, want %v", tt.a, got, tt.want)
			}
			if (Step(tt.a) == MoveOn) != MayRetry(tt.a) {
				t.Errorf("Step(%+v) and MayRetry disagree", tt.a)
			}
		})
	}
}

func TestExhausted(t *testing.T) {
	if got := Exhausted(0); got != FailNoReplica {
		t.Errorf("Exhausted(0) = %v, want no replica", got)
	}
	for _, n := range []int{1, 3} {
		if got := Exhausted(n); got != FailUnreachable {
			t.Errorf("Exhausted(%d) = %v, want unreachable", n, got)
		}
	}
}

func TestPinnedVerdict(t *testing.T) {
	tests := []struct {
		name string
		o    Outcome
		task bool
		want Verdict
	}{
		{"session: draining replica lost it", RefusedDraining, false, SessionLost},
		{"session: unreachable replica lost it", NotDelivered, false, SessionLost},
		{"session: delivered is never resent", Delivered, false, FailAfterDelivery},
		{"task: unreachable", NotDelivered, true, FailUnreachable},
		{"task: draining", RefusedDraining, true, FailUnreachable},
		{"task: delivered is never resent", Delivered, true, FailAfterDelivery},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PinnedVerdict(tt.o, tt.task); got != tt.want {
				t.Errorf("PinnedVerdict(%v, %v) = %v, want %v", tt.o, tt.task, got, tt.want)
			}
		})
	}
}

func TestVerdictString(t *testing.T) {
	seen := map[string]bool{}
	for v := MoveOn; v <= SessionLost; v++ {
		s := v.String()
		if s == "unknown" || seen[s] {
			t.Errorf("Verdict(%d).String() = %q: missing or repeated", v, s)
		}
		seen[s] = true
	}
	if got := Verdict(99).String(); got != "unknown" {
		t.Errorf("Verdict(99).String() = %q", got)
	}
}

// TestNoneEligible: new work sent to a replica as a last resort, every one
// being out, is "no replica" unless it reached one and then failed.
func TestNoneEligible(t *testing.T) {
	for in, want := range map[Verdict]Verdict{
		FailUnreachable:   FailNoReplica,
		FailNoReplica:     FailNoReplica,
		FailAfterDelivery: FailAfterDelivery,
		MoveOn:            MoveOn,
		SessionLost:       SessionLost,
	} {
		if got := NoneEligible(in); got != want {
			t.Errorf("NoneEligible(%v) = %v, want %v", in, got, want)
		}
	}
}

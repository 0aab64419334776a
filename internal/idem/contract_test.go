package idem

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// harness is one store under test, with the means to move the clock its records expire by.
type harness struct {
	store Store
	// advance moves the store's clock forward by d: a fake clock, or a real sleep.
	advance func(d time.Duration)
	// short is a lease or TTL that a test can afford to let run out.
	short time.Duration
	// maxResult is the store's result limit.
	maxResult int
}

// dg is the request digest of every claim in a test that is not about digests.
const dg = "digest"

// long is a lease or TTL that no test outlives.
const long = time.Minute

// ignoreToken compares Outcomes without their random Token.
var ignoreToken = cmpopts.IgnoreFields(Outcome{}, "Token")

// testStore is the contract every Store meets. newHarness returns a fresh, empty store per subtest.
func testStore(t *testing.T, newHarness func(t *testing.T) harness) {
	tests := []struct {
		name string
		run  func(t *testing.T, h harness)
	}{
		{"claim complete done", testClaimCompleteDone},
		{"concurrent duplicates share one execution", testConcurrentDuplicates},
		{"release lets a waiter claim", testReleaseLetsWaiterClaim},
		{"lease expiry lets a new claim", testLeaseExpiry},
		{"result expires after its ttl", testResultTTL},
		{"oversized result rejected", testOversized},
		{"empty result recorded", testEmptyResult},
		{"ctx ends wait", testCtxEndsWait},
		{"keys isolated", testKeysIsolated},
		{"wait on unknown key", testWaitUnknown},
		{"wrong token not owner", testWrongToken},
		{"invalid arguments", testInvalidArguments},
		{"another request's record refused", testMismatchRefused},
		{"another request's done record replaced", testMismatchReplaced},
		{"wait for another request", testWaitOtherDigest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, newHarness(t)) })
	}
}

// claim claims key, failing the test on error or on a state other than want.
func claim(t *testing.T, s Store, key string, lease time.Duration, want State) Outcome {
	t.Helper()
	out, err := s.Claim(context.Background(), key, dg, lease, Refuse)
	if err != nil {
		t.Fatalf("Claim(%q): %v", key, err)
	}
	if out.State != want {
		t.Fatalf("Claim(%q) state = %v, want %v", key, out.State, want)
	}
	if (out.Token != "") != (want == Claimed) {
		t.Fatalf("Claim(%q) token = %q in state %v", key, out.Token, out.State)
	}
	return out
}

// checkOutcome compares an Outcome with want, ignoring the token.
func checkOutcome(t *testing.T, what string, got, want Outcome, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if diff := cmp.Diff(want, got, ignoreToken); diff != "" {
		t.Fatalf("%s (-want +got):\n%s", what, diff)
	}
}

func testClaimCompleteDone(t *testing.T, h harness) {
	ctx, s := context.Background(), h.store
	first := claim(t, s, "k", long, Claimed)
	claim(t, s, "k", long, Running)
	if err := s.Complete(ctx, "k", first.Token, []byte("result"), long); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	want := Outcome{State: Done, Result: []byte("result")}
	got, err := s.Claim(ctx, "k", dg, long, Refuse)
	checkOutcome(t, "Claim after Complete", got, want, err)
	got, err = s.Wait(ctx, "k", dg)
	checkOutcome(t, "Wait after Complete", got, want, err)
	if err := s.Complete(ctx, "k", first.Token, []byte("again"), long); !errors.Is(err, ErrNotOwner) {
		t.Errorf("second Complete = %v, want ErrNotOwner", err)
	}
	if err := s.Release(ctx, "k", first.Token); !errors.Is(err, ErrNotOwner) {
		t.Errorf("Release after Complete = %v, want ErrNotOwner", err)
	}
	got, err = s.Claim(ctx, "k", dg, long, Refuse)
	checkOutcome(t, "Claim after refused Complete", got, want, err)
}

func testConcurrentDuplicates(t *testing.T, h harness) {
	const n = 16
	ctx, s := context.Background(), h.store
	states := make(chan State, n)
	allClaimed := make(chan struct{})
	results := make([]Outcome, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			out, err := s.Claim(ctx, "dup", dg, long, Refuse)
			if err != nil {
				errs[i] = err
				states <- 0
				return
			}
			states <- out.State
			switch out.State {
			case Claimed:
				<-allClaimed // every duplicate has arrived while this one "runs"
				errs[i] = s.Complete(ctx, "dup", out.Token, []byte("once"), long)
				results[i] = Outcome{State: Done, Result: []byte("once")}
			case Running:
				results[i], errs[i] = s.Wait(ctx, "dup", dg)
			default:
				errs[i] = fmt.Errorf("Claim state %v", out.State)
			}
		})
	}
	count := map[State]int{}
	for range n {
		count[<-states]++
	}
	close(allClaimed)
	wg.Wait()
	if diff := cmp.Diff(map[State]int{Claimed: 1, Running: n - 1}, count); diff != "" {
		t.Errorf("Claim states (-want +got):\n%s", diff)
	}
	for i := range n {
		checkOutcome(t, fmt.Sprintf("goroutine %d", i), results[i], Outcome{State: Done, Result: []byte("once")}, errs[i])
	}
}

func testReleaseLetsWaiterClaim(t *testing.T, h harness) {
	ctx, s := context.Background(), h.store
	first := claim(t, s, "k", long, Claimed)
	claim(t, s, "k", long, Running)
	waited := make(chan Outcome, 1)
	waitErr := make(chan error, 1)
	go func() {
		out, err := s.Wait(ctx, "k", dg)
		waited <- out
		waitErr <- err
	}()
	if err := s.Release(ctx, "k", first.Token); err != nil {
		t.Fatalf("Release: %v", err)
	}
	checkOutcome(t, "Wait after Release", <-waited, Outcome{State: Released}, <-waitErr)
	second := claim(t, s, "k", long, Claimed)
	if second.Token == first.Token {
		t.Errorf("second claim reused token %q", first.Token)
	}
	if err := s.Release(ctx, "k", first.Token); !errors.Is(err, ErrNotOwner) {
		t.Errorf("Release with the released token = %v, want ErrNotOwner", err)
	}
}

func testLeaseExpiry(t *testing.T, h harness) {
	ctx, s := context.Background(), h.store
	first := claim(t, s, "k", h.short, Claimed)
	claim(t, s, "k", long, Running)
	h.advance(h.short * 3 / 2)
	got, err := s.Wait(ctx, "k", dg)
	checkOutcome(t, "Wait after the lease ran out", got, Outcome{State: Released}, err)
	second := claim(t, s, "k", long, Claimed)
	if err := s.Complete(ctx, "k", first.Token, []byte("late"), long); !errors.Is(err, ErrNotOwner) {
		t.Errorf("Complete by the expired claimant = %v, want ErrNotOwner", err)
	}
	if err := s.Release(ctx, "k", first.Token); !errors.Is(err, ErrNotOwner) {
		t.Errorf("Release by the expired claimant = %v, want ErrNotOwner", err)
	}
	claim(t, s, "k", long, Running)
	if err := s.Complete(ctx, "k", second.Token, []byte("second"), long); err != nil {
		t.Fatalf("Complete by the new claimant: %v", err)
	}
	got, err = s.Claim(ctx, "k", dg, long, Refuse)
	checkOutcome(t, "Claim after the new claimant completed", got, Outcome{State: Done, Result: []byte("second")}, err)
}

func testResultTTL(t *testing.T, h harness) {
	ctx, s := context.Background(), h.store
	first := claim(t, s, "k", long, Claimed)
	if err := s.Complete(ctx, "k", first.Token, []byte("r"), h.short); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	claim(t, s, "k", long, Done)
	h.advance(h.short * 3 / 2)
	got, err := s.Wait(ctx, "k", dg)
	checkOutcome(t, "Wait after the ttl", got, Outcome{State: Released}, err)
	claim(t, s, "k", long, Claimed)
}

func testOversized(t *testing.T, h harness) {
	ctx, s := context.Background(), h.store
	first := claim(t, s, "k", long, Claimed)
	big := bytes.Repeat([]byte{'x'}, h.maxResult+1)
	if err := s.Complete(ctx, "k", first.Token, big, long); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Complete with %d bytes = %v, want ErrTooLarge", len(big), err)
	}
	claim(t, s, "k", long, Running) // the claim is still held
	if err := s.Complete(ctx, "k", first.Token, big[:h.maxResult], long); err != nil {
		t.Fatalf("Complete with exactly the limit: %v", err)
	}
	got := claim(t, s, "k", long, Done)
	if len(got.Result) != h.maxResult {
		t.Errorf("recorded %d bytes, want %d", len(got.Result), h.maxResult)
	}
}

func testEmptyResult(t *testing.T, h harness) {
	ctx, s := context.Background(), h.store
	first := claim(t, s, "k", long, Claimed)
	if err := s.Complete(ctx, "k", first.Token, nil, long); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	got, err := s.Wait(ctx, "k", dg)
	checkOutcome(t, "Wait", got, Outcome{State: Done, Result: []byte{}}, err)
}

func testCtxEndsWait(t *testing.T, h harness) {
	s := h.store
	claim(t, s, "k", long, Claimed)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := s.Wait(ctx, "k", dg); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait past its deadline = %v, want context.DeadlineExceeded", err)
	}

	ctx, cancel = context.WithCancel(context.Background())
	go func() {
		time.Sleep(20 * time.Millisecond)
		cancel()
	}()
	_, err := s.Wait(ctx, "k", dg)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Wait cancelled = %v, want context.Canceled", err)
	}
	if errors.Is(err, ErrUnavailable) {
		t.Errorf("Wait cancelled = %v, must not read as ErrUnavailable", err)
	}
}

func testKeysIsolated(t *testing.T, h harness) {
	ctx, s := context.Background(), h.store
	a := claim(t, s, "a", long, Claimed)
	b := claim(t, s, "b", long, Claimed)
	if err := s.Complete(ctx, "a", a.Token, []byte("A"), long); err != nil {
		t.Fatalf("Complete a: %v", err)
	}
	claim(t, s, "b", long, Running)
	if err := s.Complete(ctx, "b", a.Token, []byte("B"), long); !errors.Is(err, ErrNotOwner) {
		t.Errorf("Complete b with a's token = %v, want ErrNotOwner", err)
	}
	if err := s.Release(ctx, "b", b.Token); err != nil {
		t.Fatalf("Release b: %v", err)
	}
	got, err := s.Claim(ctx, "a", dg, long, Refuse)
	checkOutcome(t, "Claim a", got, Outcome{State: Done, Result: []byte("A")}, err)
	claim(t, s, "c", long, Claimed)
}

func testWaitUnknown(t *testing.T, h harness) {
	got, err := h.store.Wait(context.Background(), "never", dg)
	checkOutcome(t, "Wait", got, Outcome{State: Released}, err)
}

func testWrongToken(t *testing.T, h harness) {
	ctx, s := context.Background(), h.store
	claim(t, s, "k", long, Claimed)
	for _, token := range []string{"", "not-the-token"} {
		if err := s.Complete(ctx, "k", token, []byte("x"), long); !errors.Is(err, ErrNotOwner) {
			t.Errorf("Complete with token %q = %v, want ErrNotOwner", token, err)
		}
		if err := s.Release(ctx, "k", token); !errors.Is(err, ErrNotOwner) {
			t.Errorf("Release with token %q = %v, want ErrNotOwner", token, err)
		}
	}
	if err := s.Release(ctx, "absent", "any"); !errors.Is(err, ErrNotOwner) {
		t.Errorf("Release of an absent key = %v, want ErrNotOwner", err)
	}
	claim(t, s, "k", long, Running)
}

func testInvalidArguments(t *testing.T, h harness) {
	ctx, s := context.Background(), h.store
	long257 := string(bytes.Repeat([]byte{'k'}, MaxKeyLen+1))
	checks := []struct {
		name string
		err  error
	}{
		{"empty key", func() error { _, err := s.Claim(ctx, "", dg, long, Refuse); return err }()},
		{"long key", func() error { _, err := s.Claim(ctx, long257, dg, long, Refuse); return err }()},
		{"zero lease", func() error { _, err := s.Claim(ctx, "k", dg, 0, Refuse); return err }()},
		{"zero ttl", s.Complete(ctx, "k", "t", nil, 0)},
		{"wait empty key", func() error { _, err := s.Wait(ctx, "", dg); return err }()},
		{"release empty key", s.Release(ctx, "", "t")},
		{"empty digest", func() error { _, err := s.Claim(ctx, "k", "", long, Refuse); return err }()},
		{"digest with a NUL", func() error { _, err := s.Claim(ctx, "k", "a\x00b", long, Replace); return err }()},
		{"wait empty digest", func() error { _, err := s.Wait(ctx, "k", ""); return err }()},
	}
	for _, c := range checks {
		if c.err == nil || errors.Is(c.err, ErrUnavailable) || errors.Is(c.err, ErrNotOwner) {
			t.Errorf("%s: err = %v, want an argument error", c.name, c.err)
		}
	}
	claim(t, s, "k", long, Claimed) // nothing above touched the store
}

// claimAs claims key for the request digest with reuse, failing the test on error or on an
// outcome other than want (its token ignored).
func claimAs(t *testing.T, s Store, key, digest string, reuse Reuse, want Outcome) Outcome {
	t.Helper()
	out, err := s.Claim(context.Background(), key, digest, long, reuse)
	checkOutcome(t, fmt.Sprintf("Claim(%q, %q)", key, digest), out, want, err)
	if (out.Token != "") != (want.State == Claimed) {
		t.Fatalf("Claim(%q, %q) token = %q in state %v", key, digest, out.Token, out.State)
	}
	return out
}

// testMismatchRefused: a record answers only its own request; another
// request's claim is refused, as met once, and changes nothing.
func testMismatchRefused(t *testing.T, h harness) {
	ctx, s := context.Background(), h.store
	first := claimAs(t, s, "k", "a", Refuse, Outcome{State: Claimed})
	claimAs(t, s, "k", "b", Refuse, Outcome{State: Mismatch, Reused: true, FirstReuse: true})
	if err := s.Complete(ctx, "k", first.Token, []byte("A"), long); err != nil {
		t.Fatalf("Complete after a mismatch: %v", err)
	}
	for range 2 {
		claimAs(t, s, "k", "b", Refuse, Outcome{State: Mismatch, Reused: true})
	}
	claimAs(t, s, "k", "a", Refuse, Outcome{State: Done, Result: []byte("A")})
}

// testMismatchReplaced: with Replace, another request's done record gives
// way to its claim, the flag of a reuse already met goes with it, and a
// running record is never taken.
func testMismatchReplaced(t *testing.T, h harness) {
	ctx, s := context.Background(), h.store
	a := claimAs(t, s, "k", "a", Replace, Outcome{State: Claimed})
	claimAs(t, s, "k", "b", Replace, Outcome{State: Mismatch, Reused: true, FirstReuse: true})
	if err := s.Complete(ctx, "k", a.Token, []byte("A"), long); err != nil {
		t.Fatalf("Complete a: %v", err)
	}
	b := claimAs(t, s, "k", "b", Replace, Outcome{State: Claimed, Reused: true})
	claimAs(t, s, "k", "b", Replace, Outcome{State: Running})
	if err := s.Complete(ctx, "k", b.Token, []byte("B"), long); err != nil {
		t.Fatalf("Complete b: %v", err)
	}
	claimAs(t, s, "k", "b", Replace, Outcome{State: Done, Result: []byte("B")})
	c := claimAs(t, s, "k", "c", Replace, Outcome{State: Claimed, Reused: true})
	if err := s.Release(ctx, "k", c.Token); err != nil {
		t.Fatalf("Release c: %v", err)
	}
	claimAs(t, s, "k", "a", Replace, Outcome{State: Claimed}) // no record left: a fresh one
}

// testWaitOtherDigest: a waiter never gets another request's result, nor
// waits for its run.
func testWaitOtherDigest(t *testing.T, h harness) {
	ctx, s := context.Background(), h.store
	a := claimAs(t, s, "k", "a", Replace, Outcome{State: Claimed})
	got, err := s.Wait(ctx, "k", "b")
	checkOutcome(t, "Wait for b while a runs", got, Outcome{State: Released}, err)
	if err := s.Complete(ctx, "k", a.Token, []byte("A"), long); err != nil {
		t.Fatalf("Complete a: %v", err)
	}
	got, err = s.Wait(ctx, "k", "b")
	checkOutcome(t, "Wait for b once a is done", got, Outcome{State: Released}, err)
	got, err = s.Wait(ctx, "k", "a")
	checkOutcome(t, "Wait for a", got, Outcome{State: Done, Result: []byte("A")}, err)
}

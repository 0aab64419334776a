package probe

import (
	"errors"
	"testing"
)

// run probes endpoint with the small test parameters and requires it to
// complete.
func run(t *testing.T, endpoint string) (*Result, Summary) {
	t.Helper()
	res, err := Run(t.Context(), &Options{URL: endpoint, Identities: testIdentities, Requests: testRequests})
	if err != nil {
		t.Fatalf("Run(%s): %v", endpoint, err)
	}
	if res.Done != testIdentities*testRequests {
		t.Fatalf("Run made %d requests, want %d", res.Done, testIdentities*testRequests)
	}
	return res, Summarize(res.Observations)
}

// TestHashingBalancerIsSticky probes a proxy that hashes the credential
// over three real replicas: every identity stays on one, and all three get
// some.
func TestHashingBalancerIsSticky(t *testing.T) {
	endpoint := startBalancer(t, newBalancer(startFleet(t, "r1", "r2", "r3"), hashingPick))
	_, s := run(t, endpoint)
	if err := s.ExpectSticky(); err != nil {
		t.Fatalf("ExpectSticky() = %v, want nil; summary %+v", err, s)
	}
	if s.Stickiness != 1 || s.StickyIdentities != testIdentities || s.Errors != 0 {
		t.Errorf("stickiness %v (%d of %d), %d errors; want 100%%, no errors", s.Stickiness, s.StickyIdentities, s.CleanIdentities, s.Errors)
	}
	if len(s.Replicas) != 3 {
		t.Errorf("identities reached %d replicas, want 3: %+v", len(s.Replicas), s.Replicas)
	}
	if s.MinOverMean <= 0 || s.MaxOverMean < 1 {
		t.Errorf("spread min %.2f, max %.2f of the mean; want both positive, max >= 1", s.MinOverMean, s.MaxOverMean)
	}
}

// TestRandomBalancerIsNotSticky probes a proxy that ignores the
// credential: stickiness is far below 100% and --expect sticky fails.
func TestRandomBalancerIsNotSticky(t *testing.T) {
	endpoint := startBalancer(t, newBalancer(startFleet(t, "r1", "r2", "r3"), randomPick))
	_, s := run(t, endpoint)
	if s.Errors != 0 {
		t.Fatalf("%d errors, want none", s.Errors)
	}
	if s.Stickiness > 0.2 {
		t.Errorf("stickiness %.2f through a random balancer, want far below 1", s.Stickiness)
	}
	if err := s.ExpectSticky(); !errors.Is(err, ErrNotSticky) {
		t.Errorf("ExpectSticky() = %v, want ErrNotSticky", err)
	}
}

// TestRemovedReplicaMovesOnlyItsIdentities saves a baseline, takes one
// replica out of the hashing proxy and probes again: the identities of the
// removed replica move, and no others.
func TestRemovedReplicaMovesOnlyItsIdentities(t *testing.T) {
	b := newBalancer(startFleet(t, "r1", "r2", "r3"), hashingPick)
	endpoint := startBalancer(t, b)
	first, _ := run(t, endpoint)
	base := first.Baseline()
	hadR3 := 0
	for _, name := range base.Replicas {
		if name == "r3" {
			hadR3++
		}
	}
	if hadR3 == 0 {
		t.Fatal("no identity on r3 before the removal; the test proves nothing")
	}

	b.remove("r3")
	second, s := run(t, endpoint)
	if err := s.ExpectSticky(); err != nil {
		t.Fatalf("after removal: ExpectSticky() = %v, want nil", err)
	}
	m, err := base.Compare(second)
	if err != nil {
		t.Fatalf("Compare: %v", err)
	}
	if m.Compared != testIdentities || m.Share <= 0 || m.Share >= 1 {
		t.Errorf("moved %d of %d (%.2f); want a share strictly between 0 and 1 of all %d", m.Moved, m.Compared, m.Share, testIdentities)
	}
	if m.Moved != hadR3 || m.From["r3"] != hadR3 || len(m.From) != 1 {
		t.Errorf("moved %d from %v; want exactly the %d identities of r3", m.Moved, m.From, hadR3)
	}
	now := Primaries(second.Observations)
	for id, was := range base.Replicas {
		if was != "r3" && now[id] != was {
			t.Errorf("identity %d moved from %s to %s, though %s stayed", id, was, now[id], was)
		}
	}
}

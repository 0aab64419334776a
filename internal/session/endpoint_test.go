package session

import (
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestEndpointRoundTrip: an endpoint opens as it was sealed and shows
// nothing of itself; a sealed session ID is no endpoint and a sealed
// endpoint no session ID, though one keyring seals both, so a token of one
// kind cannot be replayed as the other.
func TestEndpointRoundTrip(t *testing.T) {
	k := mustRing(t, testKey(4, 1))
	e := Endpoint{Replica: "replica-a", Target: "/messages?sessionId=0b3c6a1e-5f0e-4c1a-9a77-2d1f1b9e8c11", Issued: time.Unix(1_800_000_000, 0)}
	ep, err := k.SealEndpoint(e, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := k.OpenEndpoint(ep); err != nil || got != e {
		t.Errorf("OpenEndpoint = %+v, %v; sealed %+v", got, err, e)
	}
	if strings.Contains(ep, "replica-a") || strings.Contains(ep, "0b3c6a1e") {
		t.Error("sealed endpoint shows the replica or its session id")
	}
	sid, err := k.Seal(Claims{Replica: e.Replica, SessionID: e.Target}, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.OpenEndpoint(sid); !errors.Is(err, ErrMalformed) {
		t.Errorf("a session ID opened as an endpoint: %v", err)
	}
	if _, err := k.Open(ep); !errors.Is(err, ErrMalformed) {
		t.Errorf("an endpoint opened as a session ID: %v", err)
	}
}

// TestEndpointKeysRotate: endpoints rotate with the session keys: the
// previous key still opens, a retired one does not.
func TestEndpointKeysRotate(t *testing.T) {
	old, cur := testKey(1, 10), testKey(2, 20)
	tok, err := mustRing(t, old).SealEndpoint(Endpoint{Replica: "a", Target: "/m?s=1"}, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mustRing(t, cur, old).OpenEndpoint(tok); err != nil {
		t.Errorf("previous key: %v", err)
	}
	if _, err := mustRing(t, cur).OpenEndpoint(tok); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("retired key: %v, want ErrUnknownKey", err)
	}
	if _, err := mustRing(t, testKey(1, 99)).OpenEndpoint(tok); !errors.Is(err, ErrTampered) {
		t.Errorf("same id, other secret: %v, want ErrTampered", err)
	}
	if _, err := mustRing(t, old).SealEndpoint(Endpoint{Replica: "a", Target: strings.Repeat("/", MaxClaimBytes)}, rand.Reader); err == nil {
		t.Error("sealed an endpoint whose token would not open")
	}
}

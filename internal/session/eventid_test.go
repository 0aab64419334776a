package session

import (
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestEventIDRoundTrip(t *testing.T) {
	k := mustRing(t, testKey(1, 1))
	tests := []EventID{
		{Replica: "replica-a", Stream: StreamKey{1, 2, 3}, Pos: 0},
		{Replica: "replica-a", Stream: StreamKey{9}, Pos: 1<<64 - 1, Upstream: "abc_17"},
		{Replica: "10.0.0.7:8080", Pos: 3, Upstream: "_4", Standalone: true},
	}
	for _, e := range tests {
		tok, err := k.SealEvent("sess-1", e, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		got, err := k.OpenEvent("sess-1", tok)
		if err != nil || got != e {
			t.Errorf("round trip of %+v: %+v, %v", e, got, err)
		}
		if _, err := k.OpenEvent("sess-2", tok); !errors.Is(err, ErrTampered) {
			t.Errorf("an event id of one session opened in another: %v", err)
		}
		if _, err := k.Open(tok); !errors.Is(err, ErrMalformed) {
			t.Errorf("an event id opened as a session id: %v", err)
		}
	}
	sid, _ := k.Seal(Claims{Replica: "replica-a", SessionID: strings.Repeat("s", 40), Issued: time.Unix(5, 0)}, rand.Reader)
	if _, err := k.OpenEvent("sess-1", sid); !errors.Is(err, ErrMalformed) {
		t.Errorf("a session id opened as an event id: %v", err)
	}
}

func TestEventIDBounds(t *testing.T) {
	k := mustRing(t, testKey(1, 1))
	if _, err := k.SealEvent("s", EventID{Replica: ""}, rand.Reader); err == nil {
		t.Error("sealed an event id without a replica")
	}
	if _, err := k.SealEvent("s", EventID{Replica: "a", Upstream: strings.Repeat("x", MaxClaimBytes)}, rand.Reader); err == nil {
		t.Error("sealed an event id over the bound")
	}
	tok, err := k.SealEvent("s", EventID{Replica: "r", Upstream: strings.Repeat("x", MaxClaimBytes-1-eventFixed)}, rand.Reader)
	if err != nil || len(tok) > MaxTokenLen {
		t.Errorf("the largest event id: %d bytes, %v", len(tok), err)
	}
}

// FuzzOpenEvent: no input opens as an event ID but one sealed for the
// session, and every refusal is one of Open's reasons.
func FuzzOpenEvent(f *testing.F) {
	k := mustRing(f, testKey(1, 1))
	want := EventID{Replica: "a", Stream: StreamKey{7}, Pos: 5, Upstream: "u_4"}
	good, _ := k.SealEvent("s", want, rand.Reader)
	other, _ := k.SealEvent("t", want, rand.Reader)
	sid, _ := k.Seal(Claims{Replica: "a", SessionID: "s", Issued: time.Unix(5, 0)}, rand.Reader)
	for _, s := range []string{good, other, sid, "", "AwE", strings.Repeat("A", 120)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, token string) {
		e, err := k.OpenEvent("s", token)
		checkOpened(t, err, token == good || e == want)
	})
}

func BenchmarkSealEvent(b *testing.B) {
	k := mustRing(b, testKey(1, 1))
	e := EventID{Replica: "replica-a", Stream: StreamKey{1}, Pos: 12, Upstream: "ABCDEFGHIJKLMNOPQRSTUVWXYZ_12"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.SealEvent("sealed-session-id-of-some-length-0123456789", e, rand.Reader); err != nil {
			b.Fatal(err)
		}
	}
}

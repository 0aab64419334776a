package session

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"testing"
	"time"
)

var (
	alice = OpenerOf([OpenerLen]byte{'a', 1, 2, 3, 4, 5, 6, 7})
	bob   = OpenerOf([OpenerLen]byte{'b', 1, 2, 3, 4, 5, 6, 7})
)

func TestOpenerAdmits(t *testing.T) {
	tests := []struct {
		name           string
		opener, caller Opener
		want           bool
	}{
		{"the opener", alice, alice, true},
		{"another caller", alice, bob, false},
		{"a caller without a credential", alice, Opener{}, false},
		{"nobody's, by a caller", Opener{}, bob, true},
		{"nobody's, by nobody", Opener{}, Opener{}, true},
		{"a digest of zeros is still a caller", OpenerOf([OpenerLen]byte{}), Opener{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.opener.Admits(tt.caller); got != tt.want {
				t.Errorf("Admits = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestClaimsCheck(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	c := Claims{Replica: "a", SessionID: "s", Issued: t0, Opener: alice}
	tests := []struct {
		name   string
		caller Opener
		now    time.Time
		maxAge time.Duration
		want   error
	}{
		{"the opener, young", alice, t0.Add(time.Hour), 24 * time.Hour, nil},
		{"the opener, at the maximum age", alice, t0.Add(24 * time.Hour), 24 * time.Hour, nil},
		{"the opener, past it", alice, t0.Add(24*time.Hour + time.Second), 24 * time.Hour, ErrExpired},
		{"no maximum age", alice, t0.Add(1000 * time.Hour), 0, nil},
		{"another caller", bob, t0.Add(time.Hour), 24 * time.Hour, ErrForeign},
		{"another caller, past the age", bob, t0.Add(25 * time.Hour), 24 * time.Hour, ErrExpired},
		{"issued ahead of this clock", alice, t0.Add(-time.Minute), time.Hour, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := c.Check(tt.caller, tt.now, tt.maxAge); !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Errorf("Check = %v, want %v", err, tt.want)
			}
		})
	}
	e := Endpoint{Replica: "a", Target: "/m", Issued: t0, Opener: bob}
	if err := e.Check(alice, t0, time.Hour); !errors.Is(err, ErrForeign) {
		t.Errorf("endpoint Check by another caller = %v", err)
	}
}

// TestBoundIDsRoundTrip: a session ID and an endpoint sealed for an opener
// give it back, and carry the bound version; one sealed for nobody is
// byte for byte the earlier format (version 1), which an earlier gateway
// opens.
func TestBoundIDsRoundTrip(t *testing.T) {
	k := mustRing(t, testKey(4, 9))
	c := Claims{Replica: "replica-b", SessionID: "S1", Issued: time.Unix(1_800_000_000, 0), Opener: alice}
	tok, err := k.Seal(c, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := k.Open(tok); err != nil || got != c {
		t.Fatalf("Open = %+v, %v; want %+v", got, err, c)
	}
	if raw, _ := base64.RawURLEncoding.DecodeString(tok); raw[0] != sealVersion|boundFlag {
		t.Errorf("bound version byte %#x", raw[0])
	}
	c.Opener = Opener{}
	tok, _ = k.Seal(c, rand.Reader)
	if raw, _ := base64.RawURLEncoding.DecodeString(tok); raw[0] != sealVersion {
		t.Errorf("a session of nobody's has version %#x, want the earlier 1", raw[0])
	}
	if got, err := k.Open(tok); err != nil || got.Opener.Bound() {
		t.Fatalf("Open = %+v, %v", got, err)
	}
	e := Endpoint{Replica: "r", Target: "/messages?sessionId=x", Issued: time.Unix(7, 0), Opener: bob}
	etok, err := k.SealEndpoint(e, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := k.OpenEndpoint(etok); err != nil || got != e {
		t.Fatalf("OpenEndpoint = %+v, %v; want %+v", got, err, e)
	}
	if _, err := k.Open(etok); !errors.Is(err, ErrMalformed) {
		t.Errorf("a bound endpoint opened as a session id: %v", err)
	}
}

// TestEarlierSessionIDOpensUnbound: an ID sealed before openers existed
// (fixed bytes, version 1) still opens, bound to nobody, so that an
// upgrade ends no session; session_max_age ends it by its issue time.
func TestEarlierSessionIDOpensUnbound(t *testing.T) {
	k := mustRing(t, testKey(1, 1))
	// Sealed by the gateway before this format gained openers, with
	// testKey(1, 1): replica "a", session "s", issued at unix 5.
	const earlier = "AQEAAAAAAAAAAAAAAADGedsZvVUV4B5Ll9Nxkqwuy_xOA5Qt1cFakQo"
	c, err := k.Open(earlier)
	if err != nil {
		t.Fatal(err)
	}
	if c != (Claims{Replica: "a", SessionID: "s", Issued: time.Unix(5, 0)}) {
		t.Fatalf("claims %+v", c)
	}
	if err := c.Check(alice, time.Unix(6, 0), time.Hour); err != nil {
		t.Errorf("an earlier id refused its caller: %v", err)
	}
	if err := c.Check(alice, time.Unix(5+3601, 0), time.Hour); !errors.Is(err, ErrExpired) {
		t.Errorf("an earlier id past the maximum age: %v", err)
	}
}

// FuzzSealOpenBound: whatever the claims and opener, sealing then opening
// gives them back, and the opened claims admit their opener alone.
func FuzzSealOpenBound(f *testing.F) {
	k := mustRing(f, testKey(9, 3))
	f.Add("replica-a", "sess", int64(1_800_000_000), []byte("12345678"), true)
	f.Add("r", "", int64(0), []byte{}, false)
	f.Fuzz(func(t *testing.T, replica, sid string, issued int64, digest []byte, bound bool) {
		var o Opener
		if bound && len(digest) >= OpenerLen {
			o = OpenerOf([OpenerLen]byte(digest))
		}
		c := Claims{Replica: replica, SessionID: sid, Issued: time.Unix(issued, 0), Opener: o}
		tok, err := k.Seal(c, rand.Reader)
		if len(replica) == 0 || len(replica) > 255 || len(replica)+len(sid) > MaxClaimBytes {
			if err == nil {
				t.Fatalf("sealed claims over the bounds: %d + %d bytes", len(replica), len(sid))
			}
			return
		}
		if err != nil || len(tok) > MaxTokenLen {
			t.Fatalf("seal: %d bytes, %v", len(tok), err)
		}
		got, err := k.Open(tok)
		if err != nil || got != c {
			t.Fatalf("round trip: %+v, %v; sealed %+v", got, err, c)
		}
		if o.Bound() && got.Opener.Admits(Opener{}) {
			t.Fatal("a bound session admits a caller without a credential")
		}
	})
}

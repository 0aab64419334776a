package session

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func testKey(id uint8, fill byte) Key {
	k := Key{ID: id}
	for i := range k.Secret {
		k.Secret[i] = fill + byte(i)
	}
	return k
}

func mustRing(t testing.TB, keys ...Key) *Keyring {
	t.Helper()
	k, err := NewKeyring(keys)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestSealOpenRoundTrip(t *testing.T) {
	k := mustRing(t, testKey(7, 1))
	c := Claims{Replica: "replica-b", SessionID: "ABCDEF0123456789ABCDEF0123", Issued: time.Unix(1_800_000_000, 0)}
	tok, err := k.Seal(c, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range tok {
		if r < 0x21 || r > 0x7e {
			t.Fatalf("sealed id has a non-visible-ASCII byte %q", r)
		}
	}
	if strings.Contains(tok, c.SessionID) || strings.Contains(tok, c.Replica) {
		t.Fatal("sealed id shows the replica or its session id")
	}
	got, err := k.Open(tok)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c, got); diff != "" {
		t.Errorf("claims (-sealed +opened):\n%s", diff)
	}
	again, _ := k.Seal(c, rand.Reader)
	if again == tok {
		t.Error("two seals of the same claims are equal: the nonce is not fresh")
	}
}

func TestOpenRefuses(t *testing.T) {
	old, cur := testKey(1, 10), testKey(2, 20)
	sealer := mustRing(t, old)
	tok, err := sealer.Seal(Claims{Replica: "a", SessionID: "s"}, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(tok)
	flip := func(i int) string {
		b := bytes.Clone(raw)
		b[i] ^= 0x01
		return base64.RawURLEncoding.EncodeToString(b)
	}
	otherSecret := testKey(1, 99) // same id, another secret
	tests := []struct {
		name  string
		ring  *Keyring
		token string
		want  error
	}{
		{"rotated: old key still opens", mustRing(t, cur, old), tok, nil},
		{"retired key", mustRing(t, cur), tok, ErrUnknownKey},
		{"same id, other secret", mustRing(t, otherSecret), tok, ErrTampered},
		{"flipped key id", mustRing(t, old, testKey(0, 5)), flip(1), ErrTampered},
		{"flipped nonce", mustRing(t, old), flip(5), ErrTampered},
		{"flipped ciphertext", mustRing(t, old), flip(len(raw) - 1), ErrTampered},
		{"bad version", mustRing(t, old), flip(0), ErrMalformed},
		{"not base64", mustRing(t, old), "not*base64!", ErrMalformed},
		{"empty", mustRing(t, old), "", ErrMalformed},
		{"a replica's own id", mustRing(t, old), "3NRFVAR2TUVYLCLWHDE5YSBRMN", ErrMalformed},
		{"too long", mustRing(t, old), strings.Repeat("A", MaxTokenLen+1), ErrMalformed},
		{"truncated", mustRing(t, old), tok[:len(tok)-4], ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.ring.Open(tt.token)
			if !errors.Is(err, tt.want) && !(tt.want == nil && err == nil) {
				t.Errorf("Open = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestNewKeyringRefuses(t *testing.T) {
	if _, err := NewKeyring(nil); err == nil {
		t.Error("empty ring accepted")
	}
	if _, err := NewKeyring([]Key{testKey(3, 1), testKey(3, 2)}); err == nil {
		t.Error("duplicate key ids accepted")
	}
	k := mustRing(t, testKey(1, 1))
	if _, err := k.Seal(Claims{Replica: ""}, rand.Reader); err == nil {
		t.Error("empty replica name sealed")
	}
	if _, err := k.Seal(Claims{Replica: strings.Repeat("r", 256)}, rand.Reader); err == nil {
		t.Error("256-byte replica name sealed")
	}
}

// FuzzOpen feeds the openers untrusted session IDs and endpoints: they
// never panic, refuse with one of their three reasons, and open only what
// was sealed, each only its own kind.
func FuzzOpen(f *testing.F) {
	k := mustRing(f, testKey(1, 1))
	good, _ := k.Seal(Claims{Replica: "a", SessionID: "s", Issued: time.Unix(5, 0)}, rand.Reader)
	ep, _ := k.SealEndpoint(Endpoint{Replica: "a", Target: "/m?s", Issued: time.Unix(5, 0)}, rand.Reader)
	bc := Claims{Replica: "a", SessionID: "s", Issued: time.Unix(5, 0), Opener: OpenerOf([OpenerLen]byte{1})}
	bound, _ := k.Seal(bc, rand.Reader)
	f.Add(good)
	f.Add(ep)
	f.Add(bound)
	f.Add("")
	f.Add("AQE")
	f.Add(strings.Repeat("_", 200))
	f.Fuzz(func(t *testing.T, token string) {
		c, err := k.Open(token)
		checkOpened(t, err, token == good || token == bound || c == Claims{Replica: "a", SessionID: "s", Issued: time.Unix(5, 0)} || c == bc)
		e, err := k.OpenEndpoint(token)
		checkOpened(t, err, token == ep || e == Endpoint{Replica: "a", Target: "/m?s", Issued: time.Unix(5, 0)})
	})
}

// checkOpened fails unless err is one of Open's three reasons, or nil for
// what was sealed.
func checkOpened(t *testing.T, err error, sealed bool) {
	t.Helper()
	switch {
	case errors.Is(err, ErrMalformed) || errors.Is(err, ErrUnknownKey) || errors.Is(err, ErrTampered):
	case err != nil:
		t.Fatalf("error %v is not one of the three reasons", err)
	case !sealed:
		t.Fatal("opened a forged token")
	}
}

// FuzzSealOpen: whatever the claims, sealing then opening gives them back.
func FuzzSealOpen(f *testing.F) {
	k := mustRing(f, testKey(9, 3))
	f.Add("replica-a", "sess", int64(1_800_000_000))
	f.Fuzz(func(t *testing.T, replica, sid string, issued int64) {
		c := Claims{Replica: replica, SessionID: sid, Issued: time.Unix(issued, 0)}
		tok, err := k.Seal(c, rand.Reader)
		if len(replica) == 0 || len(replica) > 255 || len(replica)+len(sid) > MaxClaimBytes {
			if err == nil {
				t.Fatalf("sealed claims over the bounds: %d + %d bytes", len(replica), len(sid))
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		got, err := k.Open(tok)
		if err != nil || got != c {
			t.Fatalf("round trip: %+v, %v; sealed %+v", got, err, c)
		}
	})
}

func BenchmarkOpen(b *testing.B) {
	k := mustRing(b, testKey(1, 1))
	tok, _ := k.Seal(Claims{Replica: "replica-a", SessionID: "ABCDEF0123456789ABCDEF0123", Issued: time.Now()}, rand.Reader)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.Open(tok); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSeal(b *testing.B) {
	k := mustRing(b, testKey(1, 1))
	c := Claims{Replica: "replica-a", SessionID: "ABCDEF0123456789ABCDEF0123", Issued: time.Now()}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.Seal(c, rand.Reader); err != nil {
			b.Fatal(err)
		}
	}
}

// TestOpenOneSpellingOnly: an ID whose last character differs only in the
// bits base64 leaves unused decodes to the same bytes; it must not open, or
// a second spelling of a real ID could end its session.
func TestOpenOneSpellingOnly(t *testing.T) {
	k, err := NewKeyring([]Key{{ID: 1, Secret: [32]byte{7}}})
	if err != nil {
		t.Fatal(err)
	}
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	var id string
	for n := 0; ; n++ { // a sealed ID whose length leaves unused bits
		id, err = k.Seal(Claims{Replica: "a", SessionID: strings.Repeat("s", n)}, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if len(id)%4 != 0 {
			break
		}
	}
	if _, err := k.Open(id); err != nil {
		t.Fatalf("the ID itself: %v", err)
	}
	last := strings.IndexByte(alphabet, id[len(id)-1])
	spare := 2 // unused low bits of the last character: 4 with 2 characters left over, 2 with 3
	if len(id)%4 == 2 {
		spare = 4
	}
	other := id[:len(id)-1] + string(alphabet[last^1]) // same bytes, other unused bits
	if (last^1)>>spare != last>>spare {
		t.Fatal("test bug: the flipped bit is a used one")
	}
	if _, err := k.Open(other); err == nil {
		t.Fatal("a second spelling of a real session ID opened")
	}
	for _, bad := range []string{id[:10] + "\n" + id[10:], id + "=", " " + id} {
		if _, err := k.Open(bad); err == nil {
			t.Fatalf("%q opened", bad)
		}
	}
}

// TestScopedRingsOpenOnlyTheirOwn: a service's ring opens its own session
// IDs, event IDs and endpoints, and refuses another service's and the
// unscoped ring's, and the unscoped ring refuses a scoped one's.
func TestScopedRingsOpenOnlyTheirOwn(t *testing.T) {
	base := mustRing(t, testKey(3, 9))
	github, jira := base.Scoped("github"), base.Scoped("jira")
	c := Claims{Replica: "replica-a", SessionID: "S1", Issued: time.Unix(1_800_000_000, 0)}
	tok, err := github.Seal(c, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := github.Open(tok); err != nil || got != c {
		t.Fatalf("github opens its own: %+v, %v", got, err)
	}
	for name, k := range map[string]*Keyring{"jira": jira, "unscoped": base, "githu": base.Scoped("githu")} {
		if _, err := k.Open(tok); !errors.Is(err, ErrTampered) {
			t.Errorf("the %s ring opened github's session ID: %v", name, err)
		}
	}
	plain, _ := base.Seal(c, rand.Reader)
	if _, err := github.Open(plain); !errors.Is(err, ErrTampered) {
		t.Errorf("a scoped ring opened an unscoped session ID: %v", err)
	}
	if _, err := base.Scoped("").Open(plain); err != nil {
		t.Errorf("the empty scope is not the ring itself: %v", err)
	}
	ev, err := github.SealEvent(tok, EventID{Replica: "replica-a", Pos: 4}, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jira.OpenEvent(tok, ev); !errors.Is(err, ErrTampered) {
		t.Errorf("jira opened github's event ID: %v", err)
	}
	if e, err := github.OpenEvent(tok, ev); err != nil || e.Pos != 4 {
		t.Errorf("github's own event ID: %+v, %v", e, err)
	}
	ep, _ := github.SealEndpoint(Endpoint{Replica: "replica-a", Target: "/messages?sessionId=1", Issued: c.Issued}, rand.Reader)
	if _, err := jira.OpenEndpoint(ep); !errors.Is(err, ErrTampered) {
		t.Errorf("jira opened github's endpoint: %v", err)
	}
}

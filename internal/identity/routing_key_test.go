package identity

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var (
	testSalt  = []byte("0123456789abcdef-test-salt")
	otherSalt = []byte("fedcba9876543210-other-salt")
)

func newTestKeyer(t testing.TB, salt []byte) *Keyer {
	t.Helper()
	k, err := NewKeyer(salt)
	if err != nil {
		t.Fatalf("NewKeyer: %v", err)
	}
	return k
}

func mustCredential(t testing.TB, auth, priv string) Identity {
	t.Helper()
	id, ok := FromCredential(auth, priv)
	if !ok {
		t.Fatalf("FromCredential(%q, %q) found no credential", auth, priv)
	}
	return id
}

// TestKeyInput pins the bytes the HMAC covers, so that every gateway
// instance (and any future version) routes a caller alike.
func TestKeyInput(t *testing.T) {
	tests := []struct {
		name string
		id   Identity
		want string
	}{
		{"bearer", mustCredential(t, "Bearer abc", ""), "\x02bearer abc"},
		{"private token", mustCredential(t, "", "abc"), "\x02bearer abc"},
		{"basic", mustCredential(t, "Basic abc", ""), "\x02basic abc"},
		{"jwt", mustCredential(t, "Bearer "+makeJWT(t, map[string]string{"iss": "ab", "sub": "c"}, "s"), ""), "\x012:abc"},
		{"ipv4", FromAddress(netip.MustParseAddr("192.0.2.1")), "\x03192.0.2.1"},
		{"ipv6", FromAddress(netip.MustParseAddr("2001:db8::1")), "\x032001:db8::1"},
		{"zero", Identity{}, "\x00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(tt.id.appendKeyInput(nil))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("key input (-want +got):\n%s", diff)
			}
			mac := hmac.New(sha256.New, testSalt)
			mac.Write([]byte(tt.want))
			want := binary.BigEndian.Uint64(mac.Sum(nil))
			if got := newTestKeyer(t, testSalt).Key(tt.id); got != want {
				t.Errorf("Key = %#x, want HMAC-SHA256 prefix %#x", got, want)
			}
		})
	}
}

func TestKey(t *testing.T) {
	k := newTestKeyer(t, testSalt)
	other := newTestKeyer(t, otherSalt)
	addr := netip.MustParseAddr("192.0.2.1")
	tests := []struct {
		name  string
		a, b  Identity
		equal bool
		kb    *Keyer // keys b; nil means k
	}{
		{"same identity", mustCredential(t, "Bearer abc", ""), mustCredential(t, "bearer  abc ", ""), true, nil},
		{"bearer and private token", mustCredential(t, "Bearer abc", ""), mustCredential(t, "", "abc"), true, nil},
		{"mapped address", FromAddress(addr), FromAddress(netip.MustParseAddr("::ffff:192.0.2.1")), true, nil},
		{"different salt", mustCredential(t, "Bearer abc", ""), mustCredential(t, "Bearer abc", ""), false, other},
		{"different token", mustCredential(t, "Bearer abc", ""), mustCredential(t, "Bearer abd", ""), false, nil},
		{"token spelled as an address", mustCredential(t, "", "192.0.2.1"), FromAddress(addr), false, nil},
		{"basic spelled as an address", mustCredential(t, "Basic 192.0.2.1", ""), FromAddress(addr), false, nil},
		{"same credential other scheme", mustCredential(t, "Bearer abc", ""), mustCredential(t, "Basic abc", ""), false, nil},
		{"scheme inside the credential", mustCredential(t, "Bearer basic abc", ""), mustCredential(t, "Basic abc", ""), false, nil},
		{"jwt spelled as a token", mustCredential(t, "", "1:is"),
			mustCredential(t, "Bearer "+makeJWT(t, map[string]string{"iss": "i", "sub": "s"}, "s"), ""), false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kb := tt.kb
			if kb == nil {
				kb = k
			}
			ka, kbv := k.Key(tt.a), kb.Key(tt.b)
			if (ka == kbv) != tt.equal {
				t.Errorf("keys %#x and %#x: equal = %v, want %v", ka, kbv, ka == kbv, tt.equal)
			}
			if (tt.a == tt.b) != (tt.equal || tt.kb != nil) {
				t.Errorf("identities %s and %s: equal = %v", describe(tt.a), describe(tt.b), tt.a == tt.b)
			}
		})
	}
}

func TestNewKeyer(t *testing.T) {
	short := "sk-SECRET-7f3"
	if _, err := NewKeyer([]byte(short)); !errors.Is(err, ErrShortSalt) || strings.Contains(err.Error(), short) {
		t.Errorf("NewKeyer(%d bytes) error = %v, want ErrShortSalt without the salt", len(short), err)
	}
	salt := append([]byte(nil), testSalt...)
	k := newTestKeyer(t, salt)
	id := FromAddress(netip.MustParseAddr("192.0.2.1"))
	before := k.Key(id)
	salt[0] ^= 0xff // the Keyer holds its own copy
	if after := k.Key(id); after != before {
		t.Errorf("changing the caller's salt changed the key from %#x to %#x", before, after)
	}
}

func TestKeyConcurrent(t *testing.T) {
	k := newTestKeyer(t, testSalt)
	ids := []Identity{
		mustCredential(t, "Bearer abc", ""),
		mustCredential(t, "Bearer "+makeJWT(t, map[string]string{"iss": "i", "sub": "s"}, "s"), ""),
		FromAddress(netip.MustParseAddr("2001:db8::1")),
	}
	want := make([]uint64, len(ids))
	for i, id := range ids {
		want[i] = k.Key(id)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for n := range 500 {
				i := (g + n) % len(ids)
				if got := k.Key(ids[i]); got != want[i] {
					t.Errorf("concurrent Key = %#x, want %#x", got, want[i])
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestKeyAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	k := newTestKeyer(t, testSalt)
	p := testProxies(t, "X-Forwarded-For")
	jwt := "Bearer " + makeJWT(t, map[string]string{"iss": "https://auth.example", "sub": "user-42"}, "signature")
	xff := []string{"198.51.100.7, 10.0.0.2"}
	tests := []struct {
		name string
		max  float64
		run  func()
	}{
		{"key", 0, func() { k.Key(FromAddress(netip.IPv6Loopback())) }},
		{"opaque bearer", 0, func() { k.Key(Resolve("Bearer opaque-token-value", "", "10.0.0.1:5000", xff, p)) }},
		{"address", 0, func() { k.Key(Resolve("", "", "10.0.0.1:5000", xff, p)) }},
		{"jwt", 1, func() { k.Key(Resolve(jwt, "", "10.0.0.1:5000", xff, p)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := testing.AllocsPerRun(100, tt.run); got > tt.max {
				t.Errorf("%v allocations per run, want at most %v", got, tt.max)
			}
		})
	}
}

package identity

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"
)

// verifyFixture is a verifier (with the verified-token cache, if opts ask
// for it), the keys it trusts and claims that verify at now.
type verifyFixture struct {
	v    *Verifier
	keys []testKey
	now  time.Time
	good jwt.Claims
}

func newVerifyFixture(t *testing.T, opts VerifyOptions) verifyFixture {
	t.Helper()
	keys := newTestKeys(t)
	opts.Issuers, opts.Audiences = []string{"https://idp"}, []string{"https://mcp.example"}
	v, err := NewVerifier(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.SetKeys(jwksOf(t, keys)); err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	good := jwt.Claims{Issuer: "https://idp", Subject: "alice", Audience: jwt.Audience{"https://mcp.example"},
		Expiry: jwt.NewNumericDate(now.Add(time.Hour)), IssuedAt: jwt.NewNumericDate(now)}
	return verifyFixture{v: v, keys: keys, now: now, good: good}
}

// check verifies tok at at and reports whether the cache answered and how
// many signatures were checked in all so far.
func (f verifyFixture) check(t *testing.T, tok string, at time.Time) (Verified, bool, uint64, error) {
	t.Helper()
	c, cached, err := f.v.VerifyCached("Bearer "+tok, at)
	return c, cached, f.v.verified.Load(), err
}

func TestVerifyCacheReuses(t *testing.T) {
	f := newVerifyFixture(t, VerifyOptions{CacheSize: 100, CacheTTL: time.Minute})
	tok := sign(t, f.keys[1], f.good)
	first, cached, n, err := f.check(t, tok, f.now)
	if err != nil || cached || n != 1 {
		t.Fatalf("first call: cached %v, %d checked, %v", cached, n, err)
	}
	second, cached, n, err := f.check(t, tok, f.now.Add(time.Second))
	if err != nil || !cached || n != 1 || !reflect.DeepEqual(first, second) {
		t.Fatalf("second call: %+v (first %+v), cached %v, %d checked, %v", second, first, cached, n, err)
	}
	// Another token of the same caller is another entry.
	other := sign(t, f.keys[0], f.good)
	if _, cached, n, err := f.check(t, other, f.now.Add(time.Second)); err != nil || cached || n != 2 {
		t.Fatalf("another token: cached %v, %d checked, %v", cached, n, err)
	}
}

func TestVerifyCacheWindow(t *testing.T) {
	f := newVerifyFixture(t, VerifyOptions{CacheSize: 100, CacheTTL: time.Minute})
	short := f.good
	short.Expiry = jwt.NewNumericDate(f.now.Add(10 * time.Second))
	tok := sign(t, f.keys[2], short)
	if _, _, _, err := f.check(t, tok, f.now); err != nil {
		t.Fatal(err)
	}
	// Up to exp plus the 30 s skew, the cache answers...
	if _, cached, n, err := f.check(t, tok, f.now.Add(40*time.Second)); err != nil || !cached || n != 1 {
		t.Fatalf("at exp+skew: cached %v, %d checked, %v", cached, n, err)
	}
	// ...and past it, the token is checked, and refused as expired.
	if _, cached, n, err := f.check(t, tok, f.now.Add(41*time.Second)); !errors.Is(err, ErrBadToken) || cached || n != 2 {
		t.Fatalf("past exp+skew: cached %v, %d checked, %v; want a check and ErrBadToken", cached, n, err)
	}

	// A long-lived token is checked again once the TTL has passed.
	long := sign(t, f.keys[2], f.good)
	if _, _, _, err := f.check(t, long, f.now); err != nil {
		t.Fatal(err)
	}
	if _, cached, _, err := f.check(t, long, f.now.Add(time.Minute)); err != nil || !cached {
		t.Fatalf("at the TTL: cached %v, %v", cached, err)
	}
	_, cached, n, err := f.check(t, long, f.now.Add(time.Minute+time.Second))
	if err != nil || cached || n != 4 {
		t.Fatalf("past the TTL: cached %v, %d checked, %v; want a fresh check", cached, n, err)
	}

	// A clock that went back before the entry was made misses it.
	if _, cached, n, err := f.check(t, long, f.now); err != nil || cached || n != 5 {
		t.Fatalf("clock back: cached %v, %d checked, %v; want a fresh check", cached, n, err)
	}
}

func TestVerifyCacheForgetsReplacedKeys(t *testing.T) {
	f := newVerifyFixture(t, VerifyOptions{CacheSize: 100, CacheTTL: time.Minute})
	tok := sign(t, f.keys[0], f.good)
	if _, _, _, err := f.check(t, tok, f.now); err != nil {
		t.Fatal(err)
	}
	// The key that signed it is rotated out: the token no longer passes,
	// cached or not.
	if err := f.v.SetKeys(jwksOf(t, newTestKeys(t))); err != nil {
		t.Fatal(err)
	}
	if _, cached, _, err := f.check(t, tok, f.now.Add(time.Second)); !errors.Is(err, ErrBadToken) || cached {
		t.Fatalf("after the keys changed: cached %v, %v; want ErrBadToken", cached, err)
	}
}

func TestVerifyCacheKeepsNoFailure(t *testing.T) {
	f := newVerifyFixture(t, VerifyOptions{CacheSize: 100, CacheTTL: time.Minute})
	wrongAudience := f.good
	wrongAudience.Audience = jwt.Audience{"https://other"}
	notYet := f.good
	notYet.NotBefore = jwt.NewNumericDate(f.now.Add(time.Hour))
	for _, c := range []jwt.Claims{wrongAudience, notYet} {
		tok := sign(t, f.keys[1], c)
		for range 2 {
			if _, cached, _, err := f.check(t, tok, f.now); !errors.Is(err, ErrBadToken) || cached {
				t.Fatalf("cached %v, %v; want ErrBadToken", cached, err)
			}
		}
	}
	if n := f.v.verified.Load(); n != 4 {
		t.Errorf("%d signatures checked for 2 refused tokens sent twice each, want 4", n)
	}
	if n := f.v.cache.len(); n != 0 {
		t.Errorf("%d entries after refusals only, want 0", n)
	}
	// The not-yet-valid token is refused from the cache's side too once it
	// would be valid: nothing was kept for it.
	tok := sign(t, f.keys[1], notYet)
	if _, cached, _, err := f.check(t, tok, f.now.Add(time.Hour)); err != nil || cached {
		t.Fatalf("at its nbf: cached %v, %v", cached, err)
	}
}

func TestVerifyCacheBounded(t *testing.T) {
	f := newVerifyFixture(t, VerifyOptions{CacheSize: 32, CacheTTL: time.Minute})
	for i := range 200 {
		c := f.good
		c.ID = fmt.Sprint(i)
		if _, _, _, err := f.check(t, sign(t, f.keys[2], c), f.now); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.v.cache.len(); n > 32 {
		t.Fatalf("%d entries, want at most 32", n)
	}
	// Once the entries have expired, a full shard makes room.
	c := f.good
	c.ID = "later"
	tok := sign(t, f.keys[2], c)
	later := f.now.Add(2 * time.Minute)
	if _, _, _, err := f.check(t, tok, later); err != nil {
		t.Fatal(err)
	}
	if _, cached, _, err := f.check(t, tok, later); err != nil || !cached {
		t.Fatalf("a token after the others expired: cached %v, %v", cached, err)
	}
}

func TestVerifyCacheSameVerdicts(t *testing.T) {
	f := newVerifyFixture(t, VerifyOptions{CacheSize: 100, CacheTTL: time.Minute, KeepClaims: true})
	plain, err := NewVerifier(VerifyOptions{Issuers: []string{"https://idp"}, Audiences: []string{"https://mcp.example"}, KeepClaims: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := plain.SetKeys(jwksOf(t, f.keys)); err != nil {
		t.Fatal(err)
	}
	with := func(fn func(*jwt.Claims)) jwt.Claims { c := f.good; fn(&c); return c }
	claims := []jwt.Claims{
		f.good,
		with(func(c *jwt.Claims) { c.Expiry = jwt.NewNumericDate(f.now.Add(20 * time.Second)) }),
		with(func(c *jwt.Claims) { c.NotBefore = jwt.NewNumericDate(f.now.Add(50 * time.Second)) }),
		with(func(c *jwt.Claims) { c.IssuedAt = jwt.NewNumericDate(f.now.Add(45 * time.Second)) }),
		with(func(c *jwt.Claims) {
			c.IssuedAt = nil
			c.Expiry = jwt.NewNumericDate(f.now.Add(24*time.Hour + 40*time.Second))
		}),
		with(func(c *jwt.Claims) { c.Subject = "" }),
	}
	steps := []time.Duration{0, 10 * time.Second, 25 * time.Second, 55 * time.Second, 70 * time.Second, 5 * time.Second}
	for i, c := range claims {
		tok := "Bearer " + sign(t, f.keys[i%len(f.keys)], c)
		for _, d := range steps {
			at := f.now.Add(d)
			want, werr := plain.Verify(tok, at)
			got, gerr := f.v.Verify(tok, at)
			if (werr == nil) != (gerr == nil) || !reflect.DeepEqual(want, got) {
				t.Errorf("claims %d at +%s: cached verifier %+v, %v; plain %+v, %v", i, d, got, gerr, want, werr)
			}
		}
	}
}

func TestVerifyCacheOff(t *testing.T) {
	for _, opts := range []VerifyOptions{{}, {CacheSize: 100}, {CacheTTL: time.Minute}} {
		f := newVerifyFixture(t, opts)
		tok := sign(t, f.keys[1], f.good)
		for range 2 {
			if _, cached, _, err := f.check(t, tok, f.now); err != nil || cached {
				t.Fatalf("%+v: cached %v, %v", opts, cached, err)
			}
		}
		if n := f.v.verified.Load(); n != 2 {
			t.Errorf("%+v: %d checked, want 2", opts, n)
		}
	}
}

func TestVerifyCacheConcurrent(t *testing.T) {
	f := newVerifyFixture(t, VerifyOptions{CacheSize: 8, CacheTTL: time.Minute})
	toks := make([]string, 16)
	for i := range toks {
		c := f.good
		c.Subject = fmt.Sprint("caller-", i)
		toks[i] = sign(t, f.keys[2], c)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				k := (g + i) % len(toks)
				c, err := f.v.Verify("Bearer "+toks[k], f.now.Add(time.Duration(i)*time.Millisecond))
				if err != nil || c.Subject != fmt.Sprint("caller-", k) {
					t.Errorf("token %d: %+v, %v", k, c, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

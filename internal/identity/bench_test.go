package identity

import (
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"
)

// BenchmarkResolveAndKey measures the per-request cost: resolving the
// caller's identity and turning it into a routing key.
func BenchmarkResolveAndKey(b *testing.B) {
	k := newTestKeyer(b, testSalt)
	p := testProxies(b, "X-Forwarded-For")
	jwt := "Bearer " + makeJWT(b, map[string]any{
		"iss": "https://auth.example.com/realms/mcp", "sub": "6f1c1f0e-2a4b-4c1d-9d7e-0b8f1c2d3e4f",
		"aud": "mcp-gateway", "exp": 1893456000, "iat": 1893452400, "scope": "openid profile mcp:tools",
		"azp": "mcp-client", "email": "someone@example.com",
	}, string(make([]byte, 256)))
	xff := []string{"198.51.100.7, 10.0.0.2"}
	cases := []struct {
		name, auth string
	}{
		{"opaque-bearer", "Bearer glpat-xxxxxxxxxxxxxxxxxxxx"},
		{"jwt", jwt},
		{"address", ""},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var sink uint64
			for b.Loop() {
				sink += k.Key(Resolve(c.auth, "", "10.0.0.1:51234", xff, p))
			}
			_ = sink
		})
	}
}

// BenchmarkClientAddr measures a long forwarding chain of trusted hops.
func BenchmarkClientAddr(b *testing.B) {
	p := testProxies(b, "X-Forwarded-For")
	xff := []string{"198.51.100.7, 10.0.0.9, 10.0.0.8", "10.0.0.7, 192.168.1.1", "2001:db8::5, 10.0.0.2"}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := p.ClientAddr("10.0.0.1:51234", xff); !ok {
			b.Fatal("no address")
		}
	}
}

// BenchmarkVerify measures what auth.jwks_file costs each request: a
// bearer JWT's signature and claims checked against a key set, one key of
// each accepted algorithm. The signature is most of it (ES256 is the
// algorithm bench/features.sh mints).
func BenchmarkVerify(b *testing.B) {
	keys := newTestKeys(b)
	v, err := NewVerifier(VerifyOptions{Issuers: []string{"https://idp.example"}, Audiences: []string{"https://mcp.example/mcp"}})
	if err != nil {
		b.Fatal(err)
	}
	if err := v.SetKeys(jwksOf(b, keys)); err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	claims := jwt.Claims{Issuer: "https://idp.example", Subject: "user-42", Audience: jwt.Audience{"https://mcp.example/mcp"},
		IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(time.Hour))}
	cached, err := NewVerifier(VerifyOptions{Issuers: []string{"https://idp.example"}, Audiences: []string{"https://mcp.example/mcp"},
		CacheSize: 10_000, CacheTTL: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	if err := cached.SetKeys(jwksOf(b, keys)); err != nil {
		b.Fatal(err)
	}
	// cached: the same token again within auth.token_cache_ttl, answered
	// by the verified-token cache (a SHA-256 of the token and a lookup).
	b.Run("cached", func(b *testing.B) {
		auth := "Bearer " + sign(b, keys[1], claims)
		b.ReportAllocs()
		for b.Loop() {
			if _, hit, err := cached.VerifyCached(auth, now); err != nil {
				b.Fatal(err)
			} else if !hit && cached.verified.Load() > 1 {
				b.Fatal("not answered from the cache")
			}
		}
	})
	for _, k := range keys {
		auth := "Bearer " + sign(b, k, claims)
		b.Run(string(k.alg), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Verify(auth, now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

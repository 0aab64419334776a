package identity

import (
	"crypto/sha256"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// The verified-token cache: a signature check is most of a verification
// (an ES256 check is some 70 µs; BenchmarkVerify), and a client sends
// the same token with every call until it refreshes it. What a token said
// is kept under the SHA-256 of the token, never the token, for a short
// while after it verified, and reused only where verifying it again would
// give the same answer:
//
//   - with the same key set: a refreshed JWKS (a key rotated out) forgets
//     every entry at once;
//   - from the moment it verified on, and no later than its exp plus the
//     clock skew nor the cache's TTL. Every check that depends on the time
//     (exp; nbf and iat not ahead; a lifetime measured from now) that held
//     at one moment holds at any later one up to exp, so within that window
//     a second verification could not refuse it. A clock that went back
//     misses the entry and verifies anew.
//
// A token that did not verify is never kept: it costs a verification each
// time, as before. The cache is bounded: once a shard is full of live
// entries, a new token is verified and not kept, so that nobody can push
// out the entries of others by minting tokens. The verdict is the same
// with the cache and without it. Envoy's jwt_authn keeps such a cache
// (JwtCacheConfig) for the same reason.

const (
	tokenShards = 16
	// maxCachedToken is the longest token kept; a longer one is verified
	// each time (its claims would be as large).
	maxCachedToken = 8 << 10
	// sweepEvery is how often a full shard looks for expired entries.
	sweepEvery = time.Second
)

type tokenCache struct {
	ttl    time.Duration
	max    int // entries per shard
	shards [tokenShards]tokenShard
}

type tokenShard struct {
	mu    sync.Mutex
	m     map[[sha256.Size]byte]cachedToken
	swept time.Time
}

type cachedToken struct {
	v        Verified
	keys     *jose.JSONWebKeySet // the set it verified with
	from, to time.Time           // reused for now in [from, to]
}

// newTokenCache returns a cache of at most size entries, each reused for
// at most ttl; nil when either is 0 or less (no cache).
func newTokenCache(size int, ttl time.Duration) *tokenCache {
	if size <= 0 || ttl <= 0 {
		return nil
	}
	c := &tokenCache{ttl: ttl, max: max(1, (size+tokenShards-1)/tokenShards)}
	for i := range c.shards {
		c.shards[i].m = make(map[[sha256.Size]byte]cachedToken)
	}
	return c
}

func (c *tokenCache) shard(d *[sha256.Size]byte) *tokenShard { return &c.shards[d[0]%tokenShards] }

// get returns what the token of digest d said, if it verified with keys
// and may be reused at now.
func (c *tokenCache) get(d *[sha256.Size]byte, keys *jose.JSONWebKeySet, now time.Time) (Verified, bool) {
	s := c.shard(d)
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[*d]
	if !ok {
		return Verified{}, false
	}
	if e.keys != keys || now.Before(e.from) || now.After(e.to) {
		delete(s.m, *d)
		return Verified{}, false
	}
	return e.v, true
}

// put keeps what the token of digest d said, verified with keys at now
// and expiring at exp (plus skew), unless its shard is full of live
// entries.
func (c *tokenCache) put(d *[sha256.Size]byte, v Verified, keys *jose.JSONWebKeySet, now, exp time.Time, skew time.Duration) {
	to := now.Add(c.ttl)
	if e := exp.Add(skew); e.Before(to) {
		to = e
	}
	if !to.After(now) {
		return
	}
	s := c.shard(d)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.m) >= c.max {
		if now.Sub(s.swept) < sweepEvery && !now.Before(s.swept) {
			return
		}
		s.swept = now
		for k, e := range s.m {
			if e.keys != keys || now.Before(e.from) || now.After(e.to) {
				delete(s.m, k)
			}
		}
		if len(s.m) >= c.max {
			return
		}
	}
	// from is read on the wall clock (Round(0) drops the monotonic
	// reading), as the token's times are: a wall clock set back misses
	// the entry, where the monotonic clock would not have gone back.
	s.m[*d] = cachedToken{v: v, keys: keys, from: now.Round(0), to: to}
}

// len is the number of entries kept, live or not yet swept.
func (c *tokenCache) len() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}

// tokenDigest is the key a token is kept under.
func tokenDigest(tok string) [sha256.Size]byte { return sha256.Sum256([]byte(tok)) }

// Package rediscache keeps cached answers in a Valkey or Redis server shared
// by every gateway process: one copy for the fleet, a round trip per hit.
// It is the shared twin of cache.Local, under the same contract.
package rediscache

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/cache"
	"github.com/redis/go-redis/v9"
)

// genMargin is how much longer a generation outlives the entries kept
// under it, so that an expired generation (read as 0) never meets a live
// entry of an older one.
const genMargin = time.Minute

// Redis is a cache.Store in a Valkey or Redis server. A generation is the
// counter prefix+"{"+gen+"}:g"; an entry of it is the string
// prefix+"{"+gen+"}:e:"+key holding "<generation>|<value>" with its TTL as
// PX. Keys and generation names are digests (cache.Plan makes them): no
// argument, URI or identity reaches a key name. Get and Set are one script
// each, one round trip, and each touches one hash tag, the generation's,
// so one cluster slot: the store runs on Redis Cluster too. The cost is
// that a generation's entries (every cached answer of one tool, of one
// list, of one resource) live on one primary and do not spread over the
// cluster's.
type Redis struct {
	client   redis.UniversalClient
	prefix   string
	maxEntry int
	maxTTL   time.Duration
}

var _ cache.Store = (*Redis)(nil)

// New returns a store in client's server under keys starting with prefix
// (for example "mcpfleet:cache:"), keeping no value over maxEntry bytes (0
// means cache.DefaultMaxEntryBytes) and no entry longer than maxTTL. The
// caller closes client.
func New(client redis.UniversalClient, prefix string, maxEntry int, maxTTL time.Duration) *Redis {
	if maxEntry <= 0 {
		maxEntry = cache.DefaultMaxEntryBytes
	}
	return &Redis{client: client, prefix: prefix, maxEntry: maxEntry, maxTTL: maxTTL}
}

// getScript returns {gen} on a miss, {gen, index, value, pttl} on a hit.
// KEYS[1] the generation, KEYS[2..] the entries in order.
var getScript = redis.NewScript(`
local g = tonumber(redis.call('GET', KEYS[1]) or '0')
for i = 2, #KEYS do
  local v = redis.call('GET', KEYS[i])
  if v then
    local sep = string.find(v, '|', 1, true)
    if sep and tonumber(string.sub(v, 1, sep - 1)) == g then
      return {g, i - 2, string.sub(v, sep + 1), redis.call('PTTL', KEYS[i])}
    end
  end
end
return {g}
`)

// setScript keeps the entry if the generation is still the one seen, and
// makes the generation outlive it. KEYS[1] generation, KEYS[2] entry;
// ARGV: seen, value, ttl ms, generation life ms. Returns 1 kept, 0 not.
var setScript = redis.NewScript(`
local g = tonumber(redis.call('GET', KEYS[1]) or '0')
if g ~= tonumber(ARGV[1]) then return 0 end
redis.call('SET', KEYS[2], ARGV[1] .. '|' .. ARGV[2], 'PX', ARGV[3])
if g > 0 and redis.call('PTTL', KEYS[1]) < tonumber(ARGV[4]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
end
return 1
`)

// invalidateScript moves the generation on; it lives long enough that every
// entry of older generations has expired before it can read 0 again.
var invalidateScript = redis.NewScript(`
redis.call('INCR', KEYS[1])
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
return 1
`)

// Get implements cache.Store.
func (s *Redis) Get(ctx context.Context, gen string, keys ...string) (cache.Hit, error) {
	ks := make([]string, 0, len(keys)+1)
	ks = append(ks, s.genKey(gen))
	for _, k := range keys {
		ks = append(ks, s.entryKey(gen, k))
	}
	res, err := getScript.Run(ctx, s.client, ks).Slice()
	if err != nil {
		return cache.Hit{}, fmt.Errorf("looking up a cached answer: %w: %w", cache.ErrUnavailable, err)
	}
	var h cache.Hit
	if g, ok := res[0].(int64); ok {
		h.Gen = uint64(g)
	}
	if len(res) == 4 {
		i, _ := res[1].(int64)
		v, _ := res[2].(string)
		ms, _ := res[3].(int64)
		h.Found, h.Index, h.Value, h.Remaining = true, int(i), []byte(v), time.Duration(ms)*time.Millisecond
	}
	return h, nil
}

// Set implements cache.Store.
func (s *Redis) Set(ctx context.Context, gen string, seen uint64, key string, value []byte, ttl time.Duration) error {
	ttl = min(ttl, s.maxTTL)
	if len(value) > s.maxEntry || ttl < time.Millisecond {
		return nil
	}
	life := s.maxTTL + genMargin
	err := setScript.Run(ctx, s.client, []string{s.genKey(gen), s.entryKey(gen, key)},
		strconv.FormatUint(seen, 10), value, ttl.Milliseconds(), life.Milliseconds()).Err()
	if err != nil {
		return fmt.Errorf("keeping a cached answer: %w: %w", cache.ErrUnavailable, err)
	}
	return nil
}

// Invalidate implements cache.Store.
func (s *Redis) Invalidate(ctx context.Context, gen string) error {
	life := s.maxTTL + genMargin
	if err := invalidateScript.Run(ctx, s.client, []string{s.genKey(gen)}, life.Milliseconds()).Err(); err != nil {
		return fmt.Errorf("invalidating cached answers: %w: %w", cache.ErrUnavailable, err)
	}
	return nil
}

// genKey and entryKey share gen's hash tag: one slot for a generation and
// its entries.
func (s *Redis) genKey(gen string) string        { return s.prefix + "{" + gen + "}:g" }
func (s *Redis) entryKey(gen, key string) string { return s.prefix + "{" + gen + "}:e:" + key }

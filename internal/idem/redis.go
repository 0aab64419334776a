package idem

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults for RedisOptions fields left zero.
const (
	DefaultPollMin = 10 * time.Millisecond
	DefaultPollMax = 200 * time.Millisecond
)

// RedisOptions configures a Redis store. The zero value (or nil) means defaults.
type RedisOptions struct {
	// MaxResult is the largest result recorded, in bytes. Zero means DefaultMaxResult.
	MaxResult int
	// PollMin and PollMax bound Wait's polling interval, which starts at PollMin and doubles up
	// to PollMax. Zero means DefaultPollMin and DefaultPollMax.
	PollMin, PollMax time.Duration
}

// Validate reports options that cannot work.
func (o *RedisOptions) Validate() error {
	if o == nil {
		return nil
	}
	if o.MaxResult < 0 || o.PollMin < 0 || o.PollMax < 0 {
		return errors.New("validating redis idempotency options: negative value")
	}
	if o.PollMin != 0 && o.PollMax != 0 && o.PollMax < o.PollMin {
		return fmt.Errorf("validating redis idempotency options: PollMax %v below PollMin %v", o.PollMax, o.PollMin)
	}
	return nil
}

// Redis is a Store in a Valkey or Redis server (6.0 or later, standalone or cluster), shared by
// every gateway replica that uses the same server and prefix.
//
// Each key is one string, prefix+key, holding "r" while running and "d" once done, then a flag
// ('1' once a request with another digest has met the record), the request's digest, a NUL, and
// the claim token (running) or the result (done), with a PX expiry: the lease, then the result's
// TTL. A record written before records kept a digest ("R" and the token, "D" and the result) is
// another request's to every digest: never answered from, replaced or left to expire. Every
// check-and-set is one Lua script, which the server runs atomically, and expiry is measured by the
// server's clock, so replicas whose clocks disagree still agree on leases. Claim, Complete and
// Release cost one round trip each.
//
// Wait polls the key, every PollMin at first and backing off to every PollMax, so a waiter learns
// of a result up to PollMax after it is recorded, at a cost of at most 1/PollMax reads a second
// per waiter once backed off. Duplicates in flight are rare, so polling beats holding a pub/sub
// connection per waiter.
//
// The server must not evict these keys early for the guarantee to hold (see the package doc);
// under maxmemory pressure, a volatile-* policy evicts them like any other key with a TTL.
type Redis struct {
	client    redis.UniversalClient
	prefix    string
	maxResult int
	pollMin   time.Duration
	pollMax   time.Duration
}

var _ Store = (*Redis)(nil)

// Record values: a tag, a flag, the digest, a NUL, then the token or the result.
const (
	tagRunning = 'r'
	tagDone    = 'd'
)

// claimScript claims the record if absent, or reports it; a record of another digest is left,
// marked as met (its TTL kept), or, if done and ARGV[4] is '1', replaced by the claim.
// KEYS[1] record; ARGV[1] digest; ARGV[2] token; ARGV[3] lease in ms; ARGV[4] replace.
// Returns {1} claimed, {2} running, {3, result} done, {4, first} mismatch,
// {5, first} claimed in place of another request's done record, {6} not a record of ours.
var claimScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
local function claim(flag)
  redis.call('SET', KEYS[1], 'r' .. flag .. ARGV[1] .. '\0' .. ARGV[2], 'PX', ARGV[3])
end
if not v then
  claim('0')
  return {1}
end
local tag = string.sub(v, 1, 1)
local flag, digest, rest = '0', nil, nil
if tag == 'r' or tag == 'd' then
  local z = string.find(v, '\0', 3, true)
  if not z then return {6} end
  flag, digest, rest = string.sub(v, 2, 2), string.sub(v, 3, z - 1), string.sub(v, z + 1)
elseif tag ~= 'R' and tag ~= 'D' then
  return {6}
end
if digest == ARGV[1] then
  if tag == 'd' then return {3, rest} end
  return {2}
end
local first = 1
if flag == '1' then first = 0 end
if ARGV[4] == '1' and (tag == 'd' or tag == 'D') then
  claim('1')
  return {5, first}
end
if first == 1 and digest then
  redis.call('SET', KEYS[1], tag .. '1' .. string.sub(v, 3), 'KEEPTTL')
end
return {4, first}
`)

// completeScript replaces the record with the result if the claim is still the caller's.
// KEYS[1] record; ARGV[1] token; ARGV[2] result; ARGV[3] ttl in ms.
// Returns 1 recorded, 0 not owned.
var completeScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v or string.sub(v, 1, 1) ~= 'r' then return 0 end
local z = string.find(v, '\0', 3, true)
if not z or string.sub(v, z + 1) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], 'd' .. string.sub(v, 2, z) .. ARGV[2], 'PX', ARGV[3])
return 1
`)

// releaseScript deletes the record if the claim is still the caller's.
// KEYS[1] record; ARGV[1] token. Returns 1 released, 0 not owned.
var releaseScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v or string.sub(v, 1, 1) ~= 'r' then return 0 end
local z = string.find(v, '\0', 3, true)
if not z or string.sub(v, z + 1) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1
`)

// NewRedis returns a Store keeping its records in client's server under keys starting with prefix
// (for example "mcpfleet:idem:"); stores with different prefixes do not see each other's records.
// The caller keeps ownership of client and closes it. It panics if opts fail Validate, a
// programming error.
func NewRedis(client redis.UniversalClient, prefix string, opts *RedisOptions) *Redis {
	if err := opts.Validate(); err != nil {
		panic(err)
	}
	var o RedisOptions
	if opts != nil {
		o = *opts
	}
	s := &Redis{client: client, prefix: prefix, maxResult: o.MaxResult, pollMin: o.PollMin, pollMax: o.PollMax}
	if s.maxResult == 0 {
		s.maxResult = DefaultMaxResult
	}
	if s.pollMin == 0 {
		s.pollMin = DefaultPollMin
	}
	if s.pollMax == 0 {
		s.pollMax = max(DefaultPollMax, s.pollMin)
	}
	return s
}

// Claim implements Store.
func (s *Redis) Claim(ctx context.Context, key, digest string, lease time.Duration, reuse Reuse) (Outcome, error) {
	const doing = "claiming idempotency key"
	if err := errors.Join(checkKey(key), checkDigest(digest), checkDuration("lease", lease)); err != nil {
		return Outcome{}, err
	}
	token, replace := newToken(), "0"
	if reuse == Replace {
		replace = "1"
	}
	res, err := claimScript.Run(ctx, s.client, []string{s.prefix + key}, digest, token, millis(lease), replace).Slice()
	if err != nil {
		return Outcome{}, s.fail(ctx, doing, err)
	}
	code, _ := res[0].(int64)
	var first int64 = -1
	if len(res) == 2 {
		first, _ = res[1].(int64)
	}
	switch {
	case code == 1:
		return Outcome{State: Claimed, Token: token}, nil
	case code == 2:
		return Outcome{State: Running}, nil
	case code == 3 && len(res) == 2:
		if v, ok := res[1].(string); ok {
			return Outcome{State: Done, Result: []byte(v)}, nil
		}
	case code == 4 && first >= 0:
		return Outcome{State: Mismatch, Reused: true, FirstReuse: first == 1}, nil
	case code == 5 && first >= 0:
		return Outcome{State: Claimed, Token: token, Reused: true, FirstReuse: first == 1}, nil
	}
	return Outcome{}, fmt.Errorf("%s: %w: unexpected reply %v", doing, ErrUnavailable, res)
}

// Complete implements Store.
func (s *Redis) Complete(ctx context.Context, key, token string, result []byte, ttl time.Duration) error {
	if err := errors.Join(checkKey(key), checkDuration("ttl", ttl)); err != nil {
		return err
	}
	if err := checkResult(result, s.maxResult); err != nil {
		return err
	}
	if token == "" {
		return ErrNotOwner
	}
	n, err := completeScript.Run(ctx, s.client, []string{s.prefix + key}, token, result, millis(ttl)).Int64()
	if err != nil {
		return s.fail(ctx, "completing idempotency key", err)
	}
	if n != 1 {
		return ErrNotOwner
	}
	return nil
}

// Release implements Store.
func (s *Redis) Release(ctx context.Context, key, token string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if token == "" {
		return ErrNotOwner
	}
	n, err := releaseScript.Run(ctx, s.client, []string{s.prefix + key}, token).Int64()
	if err != nil {
		return s.fail(ctx, "releasing idempotency key", err)
	}
	if n != 1 {
		return ErrNotOwner
	}
	return nil
}

// Wait implements Store by polling with backoff (see Redis).
func (s *Redis) Wait(ctx context.Context, key, digest string) (Outcome, error) {
	const doing = "waiting for idempotency key"
	if err := errors.Join(checkKey(key), checkDigest(digest)); err != nil {
		return Outcome{}, err
	}
	interval := s.pollMin
	for {
		v, err := s.client.Get(ctx, s.prefix+key).Bytes()
		switch {
		case errors.Is(err, redis.Nil):
			return Outcome{State: Released}, nil
		case err != nil:
			return Outcome{}, s.fail(ctx, doing, err)
		}
		tag, of, rest, ok := parseRecord(v)
		switch {
		case !ok:
			return Outcome{}, fmt.Errorf("%s: %w: key holds a value this package did not write", doing, ErrUnavailable)
		case of != digest:
			return Outcome{State: Released}, nil
		case tag == tagDone:
			return Outcome{State: Done, Result: rest}, nil
		}
		timer := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			timer.Stop()
			return Outcome{}, fmt.Errorf("%s: %w", doing, ctx.Err())
		case <-timer.C:
		}
		interval = min(2*interval, s.pollMax)
	}
}

// parseRecord splits a record value into its tag, digest and token or result. A record
// written before records kept a digest parses with the digest "", which no request has.
func parseRecord(v []byte) (tag byte, digest string, rest []byte, ok bool) {
	if len(v) == 0 {
		return 0, "", nil, false
	}
	switch v[0] {
	case 'R', 'D':
		return v[0] + 'a' - 'A', "", v[1:], true
	case tagRunning, tagDone:
		z := bytes.IndexByte(v, 0)
		if len(v) < 2 || z < 2 {
			return 0, "", nil, false
		}
		return v[0], string(v[2:z]), v[z+1:], true
	}
	return 0, "", nil, false
}

// fail wraps a client error: ctx's error if ctx ended, else ErrUnavailable with the cause.
func (s *Redis) fail(ctx context.Context, doing string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s: %w", doing, ctxErr)
	}
	return fmt.Errorf("%s: %w: %w", doing, ErrUnavailable, err)
}

// millis converts d to whole milliseconds for PX, at least 1.
func millis(d time.Duration) int64 { return max(1, d.Milliseconds()) }

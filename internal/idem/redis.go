package idem

import (
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
// Each key is one string, prefix+key, holding "R" followed by the claim token while running and
// "D" followed by the result once done, with a PX expiry: the lease, then the result's TTL. Every
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

// Record values: a one-byte tag, then the token or the result.
const (
	tagRunning = 'R'
	tagDone    = 'D'
)

// claimScript sets the record to running if absent, else reports it.
// KEYS[1] record; ARGV[1] running value; ARGV[2] lease in ms.
// Returns {1} claimed, {2} running, {3, result} done, {4} not a record of ours.
var claimScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return {1}
end
local tag = string.sub(v, 1, 1)
if tag == 'D' then return {3, string.sub(v, 2)} end
if tag == 'R' then return {2} end
return {4}
`)

// completeScript replaces the record with the result if the claim is still the caller's.
// KEYS[1] record; ARGV[1] caller's running value; ARGV[2] done value; ARGV[3] ttl in ms.
// Returns 1 recorded, 0 not owned.
var completeScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
`)

// releaseScript deletes the record if the claim is still the caller's.
// KEYS[1] record; ARGV[1] caller's running value. Returns 1 released, 0 not owned.
var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
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
func (s *Redis) Claim(ctx context.Context, key string, lease time.Duration) (Outcome, error) {
	const doing = "claiming idempotency key"
	if err := errors.Join(checkKey(key), checkDuration("lease", lease)); err != nil {
		return Outcome{}, err
	}
	token := newToken()
	res, err := claimScript.Run(ctx, s.client, []string{s.prefix + key}, running(token), millis(lease)).Slice()
	if err != nil {
		return Outcome{}, s.fail(ctx, doing, err)
	}
	code, _ := res[0].(int64)
	switch code {
	case 1:
		return Outcome{State: Claimed, Token: token}, nil
	case 2:
		return Outcome{State: Running}, nil
	case 3:
		if len(res) == 2 {
			if v, ok := res[1].(string); ok {
				return Outcome{State: Done, Result: []byte(v)}, nil
			}
		}
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
	done := make([]byte, 1+len(result))
	done[0] = tagDone
	copy(done[1:], result)
	n, err := completeScript.Run(ctx, s.client, []string{s.prefix + key}, running(token), done, millis(ttl)).Int64()
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
	n, err := releaseScript.Run(ctx, s.client, []string{s.prefix + key}, running(token)).Int64()
	if err != nil {
		return s.fail(ctx, "releasing idempotency key", err)
	}
	if n != 1 {
		return ErrNotOwner
	}
	return nil
}

// Wait implements Store by polling with backoff (see Redis).
func (s *Redis) Wait(ctx context.Context, key string) (Outcome, error) {
	const doing = "waiting for idempotency key"
	if err := checkKey(key); err != nil {
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
		case len(v) > 0 && v[0] == tagDone:
			return Outcome{State: Done, Result: v[1:]}, nil
		case len(v) == 0 || v[0] != tagRunning:
			return Outcome{}, fmt.Errorf("%s: %w: key holds a value this package did not write", doing, ErrUnavailable)
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

// fail wraps a client error: ctx's error if ctx ended, else ErrUnavailable with the cause.
func (s *Redis) fail(ctx context.Context, doing string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s: %w", doing, ctxErr)
	}
	return fmt.Errorf("%s: %w: %w", doing, ErrUnavailable, err)
}

// running returns the record value of a running claim.
func running(token string) string { return string(rune(tagRunning)) + token }

// millis converts d to whole milliseconds for PX, at least 1.
func millis(d time.Duration) int64 { return max(1, d.Milliseconds()) }

// Package redisstore keeps limits in a Valkey or Redis server shared by every
// gateway process: the shared twin of limit.Memory, under the same contract.
package redisstore

import (
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/limit"
	"github.com/redis/go-redis/v9"
)

// Redis is a limit.Store in a Valkey or Redis server (6.2 or later), shared by
// every gateway that uses the same server and prefix.
//
// A caller's state is two keys with the caller's hash tag, so that one
// script touches one cluster slot: prefix+"{c:"+caller+"}:b", a hash of the
// bucket's tokens and time, and prefix+"{c:"+caller+"}:l", a sorted set of
// the caller's leases scored by expiry. A capped tool has its own sorted set,
// prefix+"{t:"+tool+"}:l". Every key expires once it would hold nothing of
// use (a full bucket, lapsed leases), so idle callers cost nothing.
//
// One Lua script decides and updates (acquireScript, which is
// limit.DecideBatch line for line), reading the server's clock (TIME), so gateways whose clocks
// disagree still agree on buckets and leases. Every script touches the keys
// of one hash tag, one cluster slot, so the same store runs on Redis
// Cluster (and on a server that enforces the cluster's rules behind one
// address). A call of a capped tool therefore takes two: toolScript first
// reserves a place among the tool's leases in the tool's slot (or says how
// long until one frees), then acquireScript decides in the caller's slot
// with that answer counted as the tool's limit, and consumes only if every
// limit allows; a call it refuses gives its reserved place back (a third
// round trip, on that path only). Between the reservation and the give-back
// another call of the tool may see it full for one round trip: the cost of
// a fleet-wide cap on a cluster, besides the second round trip. A batch
// (AcquireBatch) reserves its places tool by tool, each tool's all or
// none, then decides all its calls in the caller's slot at once.
type Redis struct {
	client redis.UniversalClient
	prefix string
}

var _ limit.Store = (*Redis)(nil)

// New returns a store in client's server under keys starting with
// prefix (for example "mcpfleet:limit:"). The caller keeps ownership of
// client and closes it.
func New(client redis.UniversalClient, prefix string) *Redis {
	return &Redis{client: client, prefix: prefix}
}

// The store's clock in milliseconds, with microseconds as the fraction, and
// numbers written with 17 significant digits so that they read back exact.
const luaNow = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local function num(x) return string.format('%.17g', x) end
`

// acquireScript is limit.DecideBatch in Lua, then the update if allowed.
// KEYS[1] bucket, KEYS[2] caller leases (one slot: the caller's).
// ARGV: rate, burst, concurrency, the refusing tool's cap, lease ttl ms,
// calls, busy retry ms, the tools' longest wait in ms (0: toolScript
// reserved every place, or no cap), then one lease member per call when
// the caller's leases are counted. Returns {allowed, reason, retry ms,
// limit, remaining}.
var acquireScript = redis.NewScript(luaNow + `
local rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local conc, cap = tonumber(ARGV[3]), tonumber(ARGV[4])
local ttl, calls, busy = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])

local tokens = burst
if rate > 0 then
  local b = redis.call('HMGET', KEYS[1], 't', 'at')
  if b[1] and b[2] then
    local elapsed = math.max(0, now - tonumber(b[2]))
    tokens = math.min(burst, tonumber(b[1]) + rate * elapsed / 1000)
  end
end
local function live(key)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', num(now))
  local n = redis.call('ZCARD', key)
  local earliest = nil
  if n > 0 then earliest = tonumber(redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')[2]) end
  return n, earliest
end
local function wait_busy(earliest)
  local w = busy
  if earliest then w = math.min(w, math.ceil(earliest - now)) end
  return math.max(w, 1)
end

local reason, wait, limit = 0, 0, 0
local function refuse(r, w, l)
  if w > wait then reason, wait, limit = r, w, l end
end
if rate > 0 and tokens < calls then refuse(1, math.ceil((calls - tokens) / rate * 1000), burst) end
if conc > 0 then
  local n, e = live(KEYS[2])
  if n + calls > conc then refuse(2, wait_busy(e), conc) end
end
if cap > 0 and tonumber(ARGV[8]) > 0 then refuse(3, tonumber(ARGV[8]), cap) end
if reason ~= 0 then return {0, reason, wait, limit, 0} end

local remaining = 0
if rate > 0 then
  tokens = tokens - calls
  remaining = math.floor(tokens)
  redis.call('HSET', KEYS[1], 't', num(tokens), 'at', num(now))
  redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) / rate * 1000) + 1000)
end
local exp = num(now + ttl)
if conc > 0 then
  for i = 9, #ARGV do redis.call('ZADD', KEYS[2], exp, ARGV[i]) end
  redis.call('PEXPIRE', KEYS[2], ttl + 1000)
end
if rate > 0 then return {1, 0, 0, burst, remaining} end
return {1, 0, 0, 0, 0}
`)

// toolScript reserves places among a capped tool's leases, one for each
// member, all or none, in the tool's slot. KEYS[1] tool leases; ARGV: cap,
// lease ttl ms, busy retry ms, then the members. Returns 0 when the places
// are the members', else how long in ms until one may free
// (limit.DecideBatch's wait for a busy limit).
var toolScript = redis.NewScript(luaNow + `
local cap, ttl, busy = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', num(now))
if redis.call('ZCARD', KEYS[1]) + #ARGV - 3 > cap then
  local earliest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')[2]
  if not earliest then return busy end
  return math.max(math.min(busy, math.ceil(tonumber(earliest) - now)), 1)
end
for i = 4, #ARGV do redis.call('ZADD', KEYS[1], num(now + ttl), ARGV[i]) end
redis.call('PEXPIRE', KEYS[1], ttl + 1000)
return 0
`)

// renewScript moves the expiry of a lease that still exists (ZADD XX).
// KEYS[1] leases (a caller's or a tool's: one slot); ARGV: member, ttl ms.
var renewScript = redis.NewScript(luaNow + `
if redis.call('ZADD', KEYS[1], 'XX', 'CH', num(now + tonumber(ARGV[2])), ARGV[1]) == 1 then
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) + 1000)
end
return 1
`)

// Acquire implements Store.
func (s *Redis) Acquire(ctx context.Context, caller, tool string, c limit.Check) (limit.Decision, limit.Lease, error) {
	d, leases, err := s.AcquireBatch(ctx, caller, []limit.Call{{Tool: tool, Cap: c.ToolCap}}, c)
	var l limit.Lease
	if len(leases) == 1 {
		l = leases[0]
	}
	return d, l, err
}

// AcquireBatch implements Store: the places of capped calls first, in each
// tool's slot (toolScript, a round trip per tool), then every call against
// the caller's limits in the caller's slot (acquireScript), which counts a
// tool's refusal as its own; the places are given back when it refuses.
func (s *Redis) AcquireBatch(ctx context.Context, caller string, calls []limit.Call, c limit.Check) (limit.Decision, []limit.Lease, error) {
	if err := c.Validate(); err != nil {
		return limit.Decision{}, nil, err
	}
	members := make([]string, len(calls))
	for i, call := range calls {
		if c.Concurrency > 0 || call.Cap > 0 {
			members[i] = rand.Text()
		}
	}
	reserved, toolWait, toolCap, err := s.reserveTools(ctx, calls, members, c.LeaseTTL)
	if err != nil || toolWait > 0 {
		s.giveBack(ctx, reserved)
		reserved = nil
	}
	if err != nil {
		return limit.Decision{}, nil, s.fail(ctx, "deciding a call's tool cap", err)
	}
	if c.Rate <= 0 && c.Concurrency <= 0 {
		// Tool caps alone (or a replica's capacity): the tools' slots
		// decided it, and the caller has no state to touch.
		return capOnly(caller, calls, members, c, toolWait, toolCap)
	}
	burst := c.Burst
	if c.Rate <= 0 {
		burst = 0
	}
	args := []any{strconv.FormatFloat(c.Rate, 'g', -1, 64), strconv.FormatFloat(burst, 'g', -1, 64),
		c.Concurrency, toolCap, millis(c.LeaseTTL), len(calls), limit.BusyRetry.Milliseconds(), toolWait}
	if c.Concurrency > 0 {
		for _, m := range members {
			args = append(args, m)
		}
	}
	res, err := acquireScript.Run(ctx, s.client, []string{s.bucketKey(caller), s.leaseKey(caller)}, args...).Int64Slice()
	if err != nil || len(res) != 5 || res[0] != 1 {
		// Refused by the caller's limits, or not known whether decided:
		// the tools' places go back (else they lapse with their leases).
		if gerr := s.giveBack(ctx, reserved); err == nil && gerr != nil && len(res) == 5 {
			err = gerr
		}
	}
	if err != nil {
		return limit.Decision{}, nil, s.fail(ctx, "deciding a call's limits", err)
	}
	if len(res) != 5 {
		return limit.Decision{}, nil, fmt.Errorf("deciding a call's limits: %w: unexpected reply %v", limit.ErrUnavailable, res)
	}
	d := limit.Decision{
		Allowed:    res[0] == 1,
		Reason:     limit.Reason(res[1]),
		RetryAfter: time.Duration(res[2]) * time.Millisecond,
		Limit:      int(res[3]),
		Remaining:  int(res[4]),
	}
	if !d.Allowed {
		return d, nil, nil
	}
	return d, leasesOf(caller, calls, members, c), nil
}

// reserveTools takes the places of the capped calls, tool by tool in the
// order they come, each tool's all or none. It stops at the first tool
// that has no room, and returns what it reserved (tool to members), that
// tool's wait in ms and its cap.
func (s *Redis) reserveTools(ctx context.Context, calls []limit.Call, members []string, ttl time.Duration) (reserved map[string][]string, wait int64, cap int, err error) {
	for i, call := range calls {
		if call.Cap <= 0 || reserved[call.Tool] != nil {
			continue
		}
		args := []any{call.Cap, millis(ttl), limit.BusyRetry.Milliseconds()}
		var ms []string
		for j := i; j < len(calls); j++ {
			if calls[j].Cap > 0 && calls[j].Tool == call.Tool {
				args, ms = append(args, members[j]), append(ms, members[j])
			}
		}
		w, err := toolScript.Run(ctx, s.client, []string{s.toolKey(call.Tool)}, args...).Int64()
		if err != nil {
			return reserved, 0, 0, err
		}
		if w > 0 {
			return reserved, w, call.Cap, nil
		}
		if reserved == nil {
			reserved = make(map[string][]string)
		}
		reserved[call.Tool] = ms
	}
	return reserved, 0, 0, nil
}

// giveBack drops places reserveTools took, on a best effort: a place not
// given back lapses with its lease.
func (s *Redis) giveBack(ctx context.Context, reserved map[string][]string) error {
	var first error
	for tool, ms := range reserved {
		if err := s.client.ZRem(context.WithoutCancel(ctx), s.toolKey(tool), toAny(ms)...).Err(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// capOnly is the decision of a check that is caps and nothing else: the
// places reserveTools took (toolWait 0), or how long until one may free.
func capOnly(caller string, calls []limit.Call, members []string, c limit.Check, toolWait int64, toolCap int) (limit.Decision, []limit.Lease, error) {
	if toolWait > 0 {
		return limit.Decision{Reason: limit.ReasonTool, RetryAfter: time.Duration(toolWait) * time.Millisecond, Limit: toolCap}, nil, nil
	}
	return limit.Decision{Allowed: true}, leasesOf(caller, calls, members, c), nil
}

// leasesOf returns the leases of allowed calls: each in its caller's set
// under a concurrency limit, and in its tool's under a cap.
func leasesOf(caller string, calls []limit.Call, members []string, c limit.Check) []limit.Lease {
	leases := make([]limit.Lease, len(calls))
	for i, call := range calls {
		if members[i] == "" {
			continue
		}
		leases[i].ID = members[i]
		if c.Concurrency > 0 {
			leases[i].Caller = caller
		}
		if call.Cap > 0 {
			leases[i].Tool = call.Tool
		}
	}
	return leases
}

// Renew implements Store: one script per lease, sent in one pipeline.
func (s *Redis) Renew(ctx context.Context, leases []limit.Lease, c limit.Check) error {
	if len(leases) == 0 {
		return nil
	}
	p := s.client.Pipeline()
	for _, l := range leases {
		for _, k := range s.keysOf(l) {
			renewScript.Run(ctx, p, []string{k}, l.ID, millis(c.LeaseTTL))
		}
	}
	if _, err := p.Exec(ctx); err != nil {
		// Run on a pipeline queues EVALSHA; a server that lost its script
		// cache answers NOSCRIPT, so load the script and send once more.
		if !redis.HasErrorPrefix(err, "NOSCRIPT") {
			return s.fail(ctx, "renewing leases", err)
		}
		if err := renewScript.Load(ctx, s.client).Err(); err != nil {
			return s.fail(ctx, "renewing leases", err)
		}
		p = s.client.Pipeline()
		for _, l := range leases {
			for _, k := range s.keysOf(l) {
				renewScript.EvalSha(ctx, p, []string{k}, l.ID, millis(c.LeaseTTL))
			}
		}
		if _, err := p.Exec(ctx); err != nil {
			return s.fail(ctx, "renewing leases", err)
		}
	}
	return nil
}

// Release implements Store: one round trip.
func (s *Redis) Release(ctx context.Context, l limit.Lease) error {
	if !l.Held() {
		return nil
	}
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range s.keysOf(l) {
			p.ZRem(ctx, k, l.ID)
		}
		return nil
	})
	if err != nil {
		return s.fail(ctx, "releasing a lease", err)
	}
	return nil
}

// keysOf returns the lease sets a lease is in: its caller's, when it was
// taken under a concurrency limit, and its tool's, under a cap.
func (s *Redis) keysOf(l limit.Lease) []string {
	keys := make([]string, 0, 2)
	if l.Caller != "" {
		keys = append(keys, s.leaseKey(l.Caller))
	}
	if l.Tool != "" {
		keys = append(keys, s.toolKey(l.Tool))
	}
	return keys
}

func (s *Redis) bucketKey(caller string) string { return s.prefix + "{c:" + caller + "}:b" }
func (s *Redis) leaseKey(caller string) string  { return s.prefix + "{c:" + caller + "}:l" }
func (s *Redis) toolKey(tool string) string     { return s.prefix + "{t:" + tool + "}:l" }

// fail wraps a client error: ctx's error if ctx ended, else limit.ErrUnavailable
// with the cause.
func (s *Redis) fail(ctx context.Context, doing string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s: %w", doing, ctxErr)
	}
	return fmt.Errorf("%s: %w: %w", doing, limit.ErrUnavailable, err)
}

// millis converts d to whole milliseconds, at least 1.
func millis(d time.Duration) int64 { return max(1, d.Milliseconds()) }

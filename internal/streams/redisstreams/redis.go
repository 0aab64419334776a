// Package redisstreams is a streams.Buffer in a Redis or Valkey server
// (5.0 or later, for Redis Streams), shared by every gateway process that
// uses the same server and prefix: a legacy stream whose client went away
// through one gateway resumes through another.
package redisstreams

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/streams"
	"github.com/redis/go-redis/v9"
)

// Store is a streams.Buffer in a Redis or Valkey server.
//
// Each stream key is two keys with one hash tag, so that they share a
// cluster slot: a Redis stream, prefix+"{"+key+"}", whose entries are the
// events, with the ID "<pos>-1" and the event's bytes in the field "d"
// (and, once ended, an end marker "<last>-2" that wakes blocked readers);
// and a hash, the stream's key+":m", holding the bytes kept ("b"), the
// position of the last event appended ("l"), the position up to which
// events were dropped ("d") and, once ended, "e". Both expire together,
// TTL after the last append or the end, by the server's clock (PEXPIRE).
// An append is one Lua script, so the bound and the expiry hold whatever
// the number of gateway processes.
type Store struct {
	client redis.UniversalClient
	prefix string
	opts   streams.Options
}

var _ streams.Buffer = (*Store)(nil)

// blockFor bounds one blocking read (XREAD BLOCK) of a cursor, which loops
// until its context ends.
const blockFor = 500 * time.Millisecond

// readCount is the most entries one read returns.
const readCount = 100

// New returns a Store keeping its streams in client's server under keys
// starting with prefix (for example "mcpfleet:stream:"), bounded by o (its
// TTL and MaxStreamBytes; MaxTotalBytes and Now are for Memory only: the
// server has its own maxmemory and clock). The caller keeps ownership of
// client and closes it.
func New(client redis.UniversalClient, prefix string, o streams.Options) *Store {
	return &Store{client: client, prefix: prefix, opts: o.WithDefaults()}
}

func (s *Store) keys(key string) []string {
	k := s.prefix + "{" + key + "}"
	return []string{k, k + ":m"}
}

// appendScript adds events, trims the oldest over the bound and refreshes
// the expiry. KEYS[1] stream, KEYS[2] meta; ARGV[1] TTL in ms, ARGV[2] the
// bound in bytes, then position and bytes of each event. An event that
// does not follow the last one (the first kept of a stream whose oldest
// events were already dropped) makes the events before it dropped.
var appendScript = redis.NewScript(`
local bytes = tonumber(redis.call('HGET', KEYS[2], 'b') or '0')
local last = tonumber(redis.call('HGET', KEYS[2], 'l') or '0')
local max = tonumber(ARGV[2])
for i = 3, #ARGV, 2 do
  local pos = tonumber(ARGV[i])
  if pos > last + 1 then
    redis.call('DEL', KEYS[1])
    bytes = 0
    redis.call('HSET', KEYS[2], 'd', ARGV[i] - 1)
  end
  redis.call('XADD', KEYS[1], ARGV[i] .. '-1', 'd', ARGV[i + 1])
  bytes = bytes + #ARGV[i + 1]
  last = pos
end
while bytes > max do
  local old = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)
  if #old == 0 then bytes = 0 break end
  redis.call('XDEL', KEYS[1], old[1][1])
  bytes = bytes - #old[1][2][2]
  redis.call('HSET', KEYS[2], 'd', string.match(old[1][1], '^(%d+)'))
end
redis.call('HSET', KEYS[2], 'b', bytes, 'l', last)
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return 1
`)

// endScript marks a stream that is there ended and refreshes its expiry.
// KEYS[1] stream, KEYS[2] meta; ARGV[1] TTL in ms. Returns 0 when there is
// no such stream.
var endScript = redis.NewScript(`
local last = redis.call('HGET', KEYS[2], 'l')
if not last then return 0 end
if not redis.call('HGET', KEYS[2], 'e') then
  redis.call('HSET', KEYS[2], 'e', 1)
  redis.call('XADD', KEYS[1], last .. '-2', 'e', 1)
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return 1
`)

// readScript returns a stream's state and its events from a position, at
// one instant. KEYS[1] stream, KEYS[2] meta; ARGV[1] first position, ARGV[2]
// the most entries. Returns {0} when there is no such stream, else {1,
// last, dropped-up-to, ended, entries}.
var readScript = redis.NewScript(`
local m = redis.call('HMGET', KEYS[2], 'l', 'd', 'e')
if not m[1] then return {0} end
local evs = {}
if ARGV[2] ~= '0' then
  evs = redis.call('XRANGE', KEYS[1], ARGV[1], '+', 'COUNT', ARGV[2])
end
return {1, m[1], m[2] or '0', m[3] or '0', evs}
`)

// Append implements streams.Buffer.
func (s *Store) Append(ctx context.Context, key string, evs ...streams.Event) error {
	args := make([]any, 0, 2+2*len(evs))
	args = append(args, s.opts.TTL.Milliseconds(), s.opts.MaxStreamBytes)
	for _, ev := range evs {
		args = append(args, strconv.FormatUint(ev.Pos, 10), ev.Data)
	}
	if err := appendScript.Run(ctx, s.client, s.keys(key), args...).Err(); err != nil {
		return fail(ctx, "appending to a stream", err)
	}
	return nil
}

// End implements streams.Buffer. Ending a stream that is not there (it
// expired) does nothing.
func (s *Store) End(ctx context.Context, key string) error {
	if err := endScript.Run(ctx, s.client, s.keys(key), s.opts.TTL.Milliseconds()).Err(); err != nil {
		return fail(ctx, "ending a stream", err)
	}
	return nil
}

// Replay implements streams.Buffer.
func (s *Store) Replay(ctx context.Context, key string, after uint64) (streams.Cursor, error) {
	c := &cursor{s: s, keys: s.keys(key), after: after}
	if _, err := c.read(ctx, 0); err != nil {
		return nil, err
	}
	return c, nil
}

// cursor reads one stream from its position; it is not safe for
// concurrent use, like any streams.Cursor.
type cursor struct {
	s       *Store
	keys    []string
	after   uint64          // the position of the last event returned
	pending []streams.Event // read, not yet returned
	ended   bool            // the last read saw the stream ended
}

// Next implements streams.Cursor.
func (c *cursor) Next(ctx context.Context) (streams.Event, error) {
	for {
		if len(c.pending) > 0 {
			ev := c.pending[0]
			c.pending = c.pending[1:]
			c.after = ev.Pos
			return ev, nil
		}
		if err := ctx.Err(); err != nil {
			return streams.Event{}, err
		}
		evs, err := c.read(ctx, readCount)
		if err != nil {
			return streams.Event{}, err
		}
		if len(evs) > 0 {
			c.pending = evs
			continue
		}
		if c.ended {
			return streams.Event{}, io.EOF
		}
		if err := c.wait(ctx); err != nil {
			return streams.Event{}, err
		}
	}
}

// read returns up to count events after the cursor's position, checking
// that the stream is there and that none of them was dropped.
func (c *cursor) read(ctx context.Context, count int) ([]streams.Event, error) {
	from := strconv.FormatUint(c.after+1, 10)
	res, err := readScript.Run(ctx, c.s.client, c.keys, from, count).Slice()
	if err != nil {
		return nil, fail(ctx, "reading a stream", err)
	}
	if len(res) == 0 || res[0] != int64(1) {
		return nil, streams.ErrUnknown
	}
	if len(res) != 5 {
		return nil, fmt.Errorf("reading a stream: %w: unexpected reply", streams.ErrUnavailable)
	}
	last, err1 := parseUint(res[1])
	dropped, err2 := parseUint(res[2])
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("reading a stream: %w: %w", streams.ErrUnavailable, err)
	}
	if c.after < last && dropped > c.after {
		return nil, streams.ErrGone
	}
	c.ended = res[3] == "1"
	entries, _ := res[4].([]any)
	evs := make([]streams.Event, 0, len(entries))
	next := c.after + 1
	for _, e := range entries {
		ev, ok, err := entry(e)
		if err != nil {
			return nil, fmt.Errorf("reading a stream: %w: %w", streams.ErrUnavailable, err)
		}
		if !ok {
			continue // the end marker
		}
		if ev.Pos != next {
			return nil, streams.ErrGone
		}
		evs = append(evs, ev)
		next++
	}
	return evs, nil
}

// wait blocks until the stream gets an entry after the cursor's position,
// or for blockFor at most.
func (c *cursor) wait(ctx context.Context) error {
	id := strconv.FormatUint(c.after, 10) + "-1"
	err := c.s.client.XRead(ctx, &redis.XReadArgs{Streams: []string{c.keys[0], id}, Count: 1, Block: blockFor}).Err()
	if err != nil && !errors.Is(err, redis.Nil) {
		return fail(ctx, "waiting on a stream", err)
	}
	return nil
}

// entry decodes one XRANGE entry: an event, or the end marker (ok false).
func entry(e any) (ev streams.Event, ok bool, err error) {
	pair, _ := e.([]any)
	if len(pair) != 2 {
		return ev, false, errors.New("malformed entry")
	}
	id, _ := pair[0].(string)
	pos, seq, found := strings.Cut(id, "-")
	if !found {
		return ev, false, errors.New("malformed entry id")
	}
	if seq == "2" {
		return ev, false, nil
	}
	fields, _ := pair[1].([]any)
	if seq != "1" || len(fields) != 2 || fields[0] != "d" {
		return ev, false, errors.New("entry this package did not write")
	}
	data, _ := fields[1].(string)
	p, err := strconv.ParseUint(pos, 10, 64)
	if err != nil {
		return ev, false, errors.New("malformed entry id")
	}
	return streams.Event{Pos: p, Data: []byte(data)}, true, nil
}

func parseUint(v any) (uint64, error) {
	s, _ := v.(string)
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, errors.New("malformed stream state")
	}
	return n, nil
}

// fail wraps a client error: ctx's error if ctx ended, else
// streams.ErrUnavailable with the cause (which names no key or data).
func fail(ctx context.Context, doing string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s: %w", doing, ctxErr)
	}
	return fmt.Errorf("%s: %w: %w", doing, streams.ErrUnavailable, err)
}

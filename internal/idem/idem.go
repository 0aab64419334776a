// Package idem keeps idempotency records for mutating MCP tool calls: a tools/call that carries an
// idempotency key runs at most once per (scope, key) while its record lives. A duplicate that
// arrives while the first execution runs waits for its result; one that arrives later is answered
// with the recorded result, without reaching an upstream.
//
// The gateway drives a Store like this (see Example):
//
//	Claim -> Claimed: run the call, then Complete (result recorded) or Release (safe to re-run)
//	      -> Running: Wait -> Done: answer with the result; Released: Claim again
//	      -> Done:    answer with the recorded result
//	any error wrapping ErrUnavailable: run the call without deduplication, and count it
//
// Two implementations share one contract: Memory, for a single replica, and Redis, for replicas
// that share a Valkey or Redis server.
//
// # Guarantee and its limits
//
// While the store is up and a record lives, at most one execution per key is started, and every
// duplicate gets that execution's result. The record lives for the claim's lease while the call
// runs and for the result's TTL after it. Outside that, a duplicate runs again:
//
//   - after the lease ends, when the claimant crashed or its call outlived the lease (the late
//     claimant's Complete then fails with ErrNotOwner and records nothing);
//   - after the result's TTL, or after the store evicted or lost the record (a Valkey restart,
//     maxmemory eviction, Memory's record cap);
//   - while the store is unavailable, deliberately: the gateway fails open rather than refusing
//     every mutating call because a cache of results is down;
//   - after a Release, which the caller promises only when the call did not reach the upstream or
//     failed in a way that is safe to repeat.
//
// So the key must be chosen by the client per logical operation, the lease must cover the
// gateway's own upstream timeout, and a tool whose repeat is harmful must still be idempotent on
// its own side; this package narrows the window in which retries repeat work, it cannot close it.
package idem

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// DefaultMaxResult is the largest result a store records unless configured otherwise: 1 MiB.
const DefaultMaxResult = 1 << 20

// MaxKeyLen is the longest key a store accepts. Keys are digests (see Digest), far shorter.
const MaxKeyLen = 256

var (
	// ErrUnavailable means the store could not be consulted or updated (Redis down or timing
	// out, or Memory full of running claims). The gateway fails open on it: it runs the call
	// without deduplication and counts the event. Errors wrap it together with their cause.
	ErrUnavailable = errors.New("idempotency store unavailable")
	// ErrTooLarge means a result exceeds the store's limit and was not recorded. The claim is
	// still held: the caller should Release it (duplicates then run again) and answer normally.
	ErrTooLarge = errors.New("idempotency result too large")
	// ErrNotOwner means the claim named by a token is no longer held: its lease ran out, it was
	// released, or another execution has claimed the key since. Nothing was changed.
	ErrNotOwner = errors.New("idempotency claim not owned")
)

// State is where a key's record stands, as seen by Claim or Wait.
type State int

const (
	// Claimed: this caller now holds the claim and must run the call, then Complete or Release.
	Claimed State = iota + 1
	// Running: another execution holds the claim; the caller should Wait.
	Running
	// Done: a result is recorded and returned in Outcome.Result.
	Done
	// Released: returned by Wait when the claim ended without a result (released, or its lease
	// ran out) or the key has no record; the caller should Claim again.
	Released
)

// String returns the state's name, for logs.
func (s State) String() string {
	switch s {
	case Claimed:
		return "claimed"
	case Running:
		return "running"
	case Done:
		return "done"
	case Released:
		return "released"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Outcome is what Claim and Wait report.
type Outcome struct {
	// State is where the record stands.
	State State
	// Token identifies this caller's claim when State is Claimed; pass it to Complete or Release.
	// It is empty otherwise.
	Token string
	// Result is the recorded result when State is Done (never nil then, possibly empty), nil
	// otherwise. The caller owns it.
	Result []byte
}

// Store keeps idempotency records. Implementations are safe for concurrent use by many goroutines
// and, for Redis, by many replicas. Keys are opaque strings of at most MaxKeyLen bytes, already
// digested by the caller (see Digest): no raw credential or client-chosen text reaches a store key.
//
// Every method returns an error wrapping ErrUnavailable when the store cannot answer, and ctx's
// error when ctx ended first.
type Store interface {
	// Claim tries to claim key for a new execution lasting at most lease (> 0), measured by the
	// store's clock. It reports Claimed with a fresh Token, Running when another execution holds
	// an unexpired claim, or Done with the recorded result.
	Claim(ctx context.Context, key string, lease time.Duration) (Outcome, error)
	// Complete records result for key, to be kept for ttl (> 0) from now by the store's clock,
	// and ends the claim named by token; waiters see Done. It fails with ErrNotOwner if that
	// claim is no longer held, and with ErrTooLarge, leaving the claim held, if result exceeds
	// the store's limit.
	Complete(ctx context.Context, key, token string, result []byte, ttl time.Duration) error
	// Release ends the claim named by token without a result; waiters see Released and may
	// claim. It fails with ErrNotOwner if that claim is no longer held.
	Release(ctx context.Context, key, token string) error
	// Wait blocks until key's record is Done (with its result) or has gone (Released: the claim
	// was released or expired, or there was none), or ctx ends. A claim taken by another
	// execution in the meantime is waited for in turn.
	Wait(ctx context.Context, key string) (Outcome, error)
}

// Digest returns the store key for an idempotency key within a scope (the caller's identity and
// the tool, say): a hex SHA-256 over both, length-prefixed so that no two (scope, key) pairs share
// a digest. Neither input can be recovered from it, so a credential in scope stays out of the store.
func Digest(scope, key string) string {
	h := sha256.New()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(scope)))
	h.Write(n[:])
	h.Write([]byte(scope))
	h.Write([]byte(key))
	return hex.EncodeToString(h.Sum(nil))
}

// newToken returns an unguessable claim token.
func newToken() string { return rand.Text() }

// checkKey rejects keys no store accepts.
func checkKey(key string) error {
	if key == "" {
		return errors.New("checking idempotency key: empty")
	}
	if len(key) > MaxKeyLen {
		return fmt.Errorf("checking idempotency key: %d bytes, limit %d", len(key), MaxKeyLen)
	}
	return nil
}

// checkDuration rejects a lease or TTL that would not expire.
func checkDuration(what string, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("checking idempotency %s: %v is not positive", what, d)
	}
	return nil
}

// checkResult rejects a result over limit.
func checkResult(result []byte, limit int) error {
	if len(result) > limit {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(result), limit)
	}
	return nil
}

// ctxErr returns ctx's error wrapped with what was being done, or nil if ctx is live.
func ctxErr(ctx context.Context, doing string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", doing, err)
	}
	return nil
}

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
//	      -> Mismatch: the key's record is another request's: refuse, or run without a record
//	any error wrapping ErrUnavailable: run the call without deduplication, and count it
//
// Every record keeps the digest of the request that made it (mcpmsg.RequestDigest): a record
// answers only a request with the same digest, so a key reused for another request never gets
// the first one's result.
//
// Two implementations share one contract: Memory, for a single replica, and Redis, for replicas
// that share a Valkey or Redis server.
//
// # Guarantee and its limits
//
// While the store is up and a record lives, at most one execution per key and request digest is
// started, and every duplicate (same key, same digest) gets that execution's result; a request
// with the key and another digest never gets it. The record lives for the claim's lease while the call
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
	"strings"
	"time"
)

// DefaultMaxResult is the largest result a store records unless configured otherwise: 1 MiB.
const DefaultMaxResult = 1 << 20

// MaxKeyLen is the longest key a store accepts. Keys are digests (see Digest), far shorter.
const MaxKeyLen = 256

// MaxDigestLen is the longest request digest a store accepts; mcpmsg.RequestDigest's are 64.
const MaxDigestLen = 128

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
	// ran out), the key has no record, or its record is now another request's; the caller
	// should Claim again.
	Released
	// Mismatch: the key's live record was made for another request (another digest, or none:
	// a record written before records kept one), and Claim left it as it was. Nothing is
	// answered from it.
	Mismatch
)

// Reuse says what Claim does when the key's live record was made for another request.
type Reuse int

const (
	// Refuse leaves the record and reports Mismatch: an Idempotency-Key reused with another
	// payload is refused (the IETF httpapi Idempotency-Key draft, "Error Scenarios").
	Refuse Reuse = iota
	// Replace replaces a done record with a claim for this request (Claimed, Reused set), and
	// leaves a running one (Mismatch): a JSON-RPC id reused for another call is a new call,
	// and a re-send of that call is deduplicated in turn.
	Replace
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
	case Mismatch:
		return "mismatch"
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
	// Reused reports that the key's live record was made for another request: State is
	// Mismatch, or Claimed in place of a done record (Replace).
	Reused bool
	// FirstReuse reports that this Reused is the first one the key's record, or a record it
	// replaced, has seen: a caller that logs reuses logs this one and no other.
	FirstReuse bool
}

// Store keeps idempotency records. Implementations are safe for concurrent use by many goroutines
// and, for Redis, by many replicas. Keys are opaque strings of at most MaxKeyLen bytes, already
// digested by the caller (see Digest): no raw credential or client-chosen text reaches a store key.
//
// Every method returns an error wrapping ErrUnavailable when the store cannot answer, and ctx's
// error when ctx ended first.
type Store interface {
	// Claim tries to claim key for a new execution of the request whose digest is digest,
	// lasting at most lease (> 0), measured by the store's clock. It reports Claimed with a
	// fresh Token, Running when another execution of the same request holds an unexpired
	// claim, Done with the result recorded for the same request, or, when the record is
	// another request's, what reuse says (Mismatch, or Claimed with Reused set).
	Claim(ctx context.Context, key, digest string, lease time.Duration, reuse Reuse) (Outcome, error)
	// Complete records result for key, to be kept for ttl (> 0) from now by the store's clock,
	// and ends the claim named by token; waiters see Done. It fails with ErrNotOwner if that
	// claim is no longer held, and with ErrTooLarge, leaving the claim held, if result exceeds
	// the store's limit.
	Complete(ctx context.Context, key, token string, result []byte, ttl time.Duration) error
	// Release ends the claim named by token without a result; waiters see Released and may
	// claim. It fails with ErrNotOwner if that claim is no longer held.
	Release(ctx context.Context, key, token string) error
	// Wait blocks until key's record is Done for the request whose digest is digest (with its
	// result) or is no longer that request's (Released: the claim was released or expired,
	// there was none, or another request's record took its place), or ctx ends. A claim of
	// the same request taken by another execution in the meantime is waited for in turn.
	Wait(ctx context.Context, key, digest string) (Outcome, error)
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

// checkDigest rejects request digests no store accepts.
func checkDigest(digest string) error {
	if digest == "" || len(digest) > MaxDigestLen || strings.IndexByte(digest, 0) >= 0 {
		return fmt.Errorf("checking request digest: empty, over %d bytes or holding a NUL", MaxDigestLen)
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

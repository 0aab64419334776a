// Package cache decides which answers the gateway may keep and give again,
// and keeps them: the one safe place for a cache in front of a fleet is
// behind admission, keyed by who asks.
//
// The rules (docs/GATEWAY.md, "Caching"):
//
//   - Results of server/discover, tools/list, prompts/list, resources/list,
//     resources/templates/list and resources/read carry the 2026-07-28 hints
//     ttlMs and cacheScope (SEP-2549). One with ttlMs > 0 is kept for that
//     long: "public" once for everyone, "private" (or no scope: never wider
//     than the server said) once per authorization context. Requests that
//     carry inputResponses or requestState, input_required results and
//     errors are never kept.
//   - Results of tools/call are kept only for tools the operator names and
//     the replicas themselves declare readOnlyHint, per caller, tool and
//     canonical arguments, for the configured TTL; never an isError result,
//     never a task.
//   - The authorization context is a salted digest of the credential
//     itself, never unverified token claims; a request without a credential
//     gets nothing private.
//   - A notifications/*/list_changed relayed from a replica drops the
//     matching lists; notifications/resources/updated drops that URI.
//
// Plan and Keep are the decision, pure and table-tested; Local and the
// shared store (package rediscache) keep the entries under one contract.
package cache

import (
	"context"
	"errors"
	"time"
)

// ErrUnavailable means the store could not answer; the gateway then asks
// the replica, as on a miss. Errors wrap it with their cause.
var ErrUnavailable = errors.New("cache store unavailable")

// Hit is what a lookup found.
type Hit struct {
	// Found reports an entry fresh and current; Index is which of the keys
	// looked up it was under, Value the entry, Remaining its time left.
	Found     bool
	Index     int
	Value     []byte
	Remaining time.Duration
	// Gen is the generation of the lookup's gen at the time of the lookup:
	// pass it to Set, so that an answer fetched before an invalidation is
	// not kept after it.
	Gen uint64
}

// Store keeps entries. Every entry depends on one generation (a list, a
// URI); Invalidate moves the generation on, and entries stored under an
// older one are gone. Implementations are safe for concurrent use; keys and
// generation names are digests (Plan makes them), never client text.
type Store interface {
	// Get looks the keys up in order and returns the first entry that is
	// fresh and stored under gen's current generation.
	Get(ctx context.Context, gen string, keys ...string) (Hit, error)
	// Set keeps value under key for ttl, if gen is still at generation
	// seen; otherwise it keeps nothing.
	Set(ctx context.Context, gen string, seen uint64, key string, value []byte, ttl time.Duration) error
	// Invalidate moves gen to a new generation.
	Invalidate(ctx context.Context, gen string) error
}

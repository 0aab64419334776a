package gateway

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/mcpfleet/mcpfleet/internal/balance"
	"github.com/mcpfleet/mcpfleet/internal/identity"
	"github.com/mcpfleet/mcpfleet/internal/ring"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// Affinity (the GitLab MCP server's load-balancing guide): under the hash policy a caller's new sessions and
// 2026-07-28 requests go to the replica its routing key hashes to on a
// consistent-hash ring with bounded loads. The key is an HMAC, under the
// secret salt, of the caller's stable identity (JWT iss+sub, else the
// normalised token, else the client address through trusted proxies), so it
// survives an OAuth refresh and is no token fingerprint.

// ringOf is the ring of one fleet snapshot.
type ringOf struct {
	snap *upstream.Snapshot
	ring *ring.Ring
}

// affinity holds the pieces of hash routing.
type affinity struct {
	keyer   *identity.Keyer
	proxies *identity.Proxies
	cache   atomic.Pointer[ringOf] // the ring of the latest snapshot seen
}

func newAffinity(o *Options) (*affinity, error) {
	salt := o.RoutingSalt
	if salt == nil {
		salt = make([]byte, 32)
		if _, err := rand.Read(salt); err != nil {
			return nil, fmt.Errorf("making a routing salt: %w", err)
		}
	}
	k, err := identity.NewKeyer(salt)
	if err != nil {
		return nil, fmt.Errorf("routing salt: %w", err)
	}
	return &affinity{keyer: k, proxies: o.Proxies}, nil
}

// ringFor returns the ring over snap's replicas, built once per snapshot
// (membership changes swap the snapshot, so the ring follows).
func (a *affinity) ringFor(snap *upstream.Snapshot) *ring.Ring {
	if c := a.cache.Load(); c != nil && c.snap == snap {
		return c.ring
	}
	names := make([]string, snap.Len())
	for i := range names {
		names[i] = snap.At(i).Name()
	}
	r, err := ring.New(names, nil)
	if err != nil {
		return nil // names are unique in a snapshot; Pick falls back anyway
	}
	a.cache.Store(&ringOf{snap: snap, ring: r})
	return r
}

// key returns the routing key of the request's caller.
func (a *affinity) key(r *http.Request) uint64 {
	var hops []string
	if a.proxies != nil {
		hops = r.Header.Values(a.proxies.Header())
	}
	id := identity.Resolve(r.Header.Get("Authorization"), r.Header.Get("Private-Token"), r.RemoteAddr, hops, a.proxies)
	return a.keyer.Key(id)
}

// routingKey returns the caller's routing key, computed once per request
// (routing and idempotency both use it).
func (g *Gateway) routingKey(r *http.Request, q *request) uint64 {
	if !q.keyed {
		q.key, q.keyed = g.aff.key(r), true
	}
	return q.key
}

// pickInput gathers what balance.Pick needs for this request.
func (g *Gateway) pickInput(r *http.Request, q *request, snap *upstream.Snapshot) balance.Input {
	in := balance.Input{Seq: g.seq.Add(1) - 1, Rnd: g.random()}
	if g.opts.Balance == balance.Hash {
		in.Key = g.routingKey(r, q)
		in.Ring = g.aff.ringFor(snap)
		in.Epsilon = g.opts.HashEpsilon
		in.MinLoad = g.opts.HashMinLoad
	}
	return in
}

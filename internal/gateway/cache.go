package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/mcpfleet/mcpfleet/internal/cache"
	"github.com/mcpfleet/mcpfleet/internal/identity"
	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
)

// Caching (docs/GATEWAY.md, "Caching"): after admission, and before
// deduplication and forwarding, a request whose answer the replicas said
// may be kept (SEP-2549 ttlMs and cacheScope; or a configured read-only
// tool) is answered from the cache when it holds a fresh entry for it,
// under the request's own id. On a miss the replica's answer is kept on its
// way to the client. The decision is package cache's; this file is its
// I/O.

// cachePlan is a missed lookup, kept until the answer arrives.
type cachePlan struct {
	lookup cache.Lookup
	gen    uint64 // the generation seen at the lookup
}

// fromCache runs the cache step. It returns true when it answered the
// request from the cache.
func (g *Gateway) fromCache(w http.ResponseWriter, r *http.Request, q *request, rec *record) bool {
	if g.opts.Cache == nil || q.msg.Kind != mcpmsg.KindRequest || q.msg.Batch || !(cache.Hinted(q.msg.Method) || q.msg.Method == "tools/call") {
		return false
	}
	var body struct {
		Params json.RawMessage `json:"params"`
	}
	_ = json.Unmarshal(q.body, &body) // classified already: it decodes
	version := r.Header.Get(mcpmsg.HeaderProtocolVersion)
	if version == "" {
		version = q.era.String()
	}
	l, ok := cache.Plan(cache.Request{
		Method: q.msg.Method, Version: version, Params: body.Params,
		Caller: g.cacheCaller(r, q), ReadOnly: q.msg.Method == "tools/call" && g.annotations.readOnly(q.msg.Name),
	}, g.opts.CacheRules)
	if !ok {
		return false
	}
	if l.Bypass != "" {
		g.countCache(rec, q, "bypass")
		return false
	}
	ctx, cancel := context.WithTimeout(r.Context(), g.opts.DialTimeout)
	defer cancel()
	h, err := g.opts.Cache.Get(ctx, l.Gen, l.Keys()...)
	if err != nil {
		// The store is down: the replica answers, as on a miss, and its
		// answer is not kept.
		g.metrics.cacheErrors.Inc()
		g.log.Warn("cache store unavailable: asking the replica", "error", err)
		g.countCache(rec, q, "miss")
		return false
	}
	if !h.Found {
		g.countCache(rec, q, "miss")
		rec.cachePlan = &cachePlan{lookup: l, gen: h.Gen}
		return false
	}
	msg, err := cache.Answer(h.Value, q.msg.ID, h.Remaining, l.Tool)
	if err != nil {
		g.countCache(rec, q, "miss")
		rec.cachePlan = &cachePlan{lookup: l, gen: h.Gen}
		return false
	}
	g.countCache(rec, q, "hit")
	if watchesTools(q) {
		// A gateway that only ever saw the list from the cache learns the
		// replicas' annotations from it too.
		g.annotations.learn(msg)
	}
	g.answerCached(w, r, q, g.filterList(q, msg), rec)
	return true
}

// answerCached writes a cached answer in the shape the client asked for:
// JSON when it accepts JSON, else one SSE event.
func (g *Gateway) answerCached(w http.ResponseWriter, r *http.Request, q *request, msg []byte, rec *record) {
	rec.status, rec.replica = http.StatusOK, "cache"
	h := w.Header()
	if q.sessionID != "" {
		h.Set(mcpmsg.HeaderSessionID, q.sessionID)
	}
	if !acceptsJSON(r.Header.Values("Accept")) && acceptsEventStream(r.Header.Values("Accept")) {
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		ev := jsonEvent(msg)
		rec.bytes, rec.events = int64(len(ev)), 1
		w.Write(ev)
		return
	}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(msg)))
	w.WriteHeader(http.StatusOK)
	rec.bytes = int64(len(msg))
	w.Write(msg)
}

// keepAnswer keeps the final answer to a missed lookup, if it may be kept.
func (g *Gateway) keepAnswer(q *request, msg []byte, rec *record) {
	p := rec.cachePlan
	if p == nil || !mcpmsg.IsResponseTo(msg, q.msg.ID) {
		return
	}
	rec.cachePlan = nil // one answer per request
	e, ok := cache.Keep(p.lookup, msg, g.opts.CacheRules)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(g.base, g.opts.DialTimeout)
	defer cancel()
	if err := g.opts.Cache.Set(ctx, p.lookup.Gen, p.gen, e.Key, e.Value, e.TTL); err != nil {
		g.metrics.cacheErrors.Inc()
		g.log.Warn("keeping a cached answer failed", "error", err)
	}
}

// invalidateFrom drops what a replica's notification says has changed.
func (g *Gateway) invalidateFrom(msg []byte) {
	if g.opts.Cache == nil {
		return
	}
	gen := cache.Invalidation(msg)
	if gen == "" {
		return
	}
	ctx, cancel := context.WithTimeout(g.base, g.opts.DialTimeout)
	defer cancel()
	if err := g.opts.Cache.Invalidate(ctx, gen); err != nil {
		g.metrics.cacheErrors.Inc()
		g.log.Warn("invalidating cached answers failed: they live out their ttl", "error", err)
		return
	}
	g.metrics.cacheInvalidations.Inc()
}

// cacheCaller is the authorization context of cached answers: the verified
// caller, or the salted digest of the credential itself; "" without one
// (nothing private then).
func (g *Gateway) cacheCaller(r *http.Request, q *request) string {
	if q.verified != nil {
		return strconv.FormatUint(g.aff.keyer.Key(q.verified.Identity()), 16)
	}
	id, ok := identity.FromCredentialItself(r.Header.Get("Authorization"), r.Header.Get("Private-Token"))
	if !ok {
		return ""
	}
	return strconv.FormatUint(g.aff.keyer.Key(id), 16)
}

func (g *Gateway) countCache(rec *record, q *request, outcome string) {
	rec.cache = outcome
	g.metrics.cache.WithLabelValues(q.label, outcome).Inc()
}

// acceptsJSON reports whether an Accept header admits application/json.
func acceptsJSON(values []string) bool {
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			mt, _, _ := strings.Cut(part, ";")
			mt = strings.TrimSpace(mt)
			if strings.EqualFold(mt, "application/json") || strings.EqualFold(mt, "application/*") || mt == "*/*" {
				return true
			}
		}
	}
	return len(values) == 0
}

// cacheBytes reports the bytes a local cache holds, for the gauge.
func (g *Gateway) cacheBytes() float64 {
	if l, ok := g.opts.Cache.(interface{ Bytes() int }); ok {
		return float64(l.Bytes())
	}
	return 0
}

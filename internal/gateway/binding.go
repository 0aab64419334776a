package gateway

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/identity"
	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
	"github.com/mcpfleet/mcpfleet/internal/session"
	"github.com/prometheus/client_golang/prometheus"
)

// Sessions bound to their opener (docs/GATEWAY.md, "Session hijacking";
// the MCP security best practices, "Session Hijacking"). At initialize the
// gateway seals into the session ID who opened it: a keyed digest of the
// verified iss and sub when it verifies tokens, else of the credential
// itself (never unverified JWT claims, which anyone can write), nothing
// for a caller without a credential. A 2024-11-05 stream's sealed endpoint
// and a 2026-07-28 task record carry it the same way. A later use by
// another caller is answered as an unknown ID is (404 with -32001; an
// unknown task's -32602 for a task), counted, and logged with the first
// bytes of both digests. Event IDs are bound to the session ID they were
// seen in (session.OpenEvent), so a resume is bound with its session.

// errUnknownTask is the answer to a tasks/* request for another caller's
// task: what a replica answers for a task it does not know (the tasks
// extension, SEP-2663: an invalid or nonexistent taskId is -32602).
var errUnknownTask = &mcpmsg.Error{Status: http.StatusOK, Code: codeInvalidParams, Message: "unknown task"}

// codeInvalidParams is JSON-RPC 2.0's invalid params (section 5.1).
const codeInvalidParams = -32602

// openerContext is what the key of opener digests is derived with from
// the routing salt, so that an opener digest is never a routing or limits
// key, which stores and logs may see.
const openerContext = "mcpfleet session opener v1"

// newOpenerKeyer returns the keyer of opener digests: an HMAC keyed by a
// key derived from the routing salt, which the secret file gives every
// gateway process alike.
func newOpenerKeyer(salt []byte) (*identity.Keyer, error) {
	mac := hmac.New(sha256.New, salt)
	mac.Write([]byte(openerContext))
	k, err := identity.NewKeyer(mac.Sum(nil))
	if err != nil {
		return nil, fmt.Errorf("session opener key: %w", err)
	}
	return k, nil
}

// identify sets the request's caller for binding, when the request may
// open or use a session, an endpoint or a task and binding is on.
func (g *Gateway) identify(r *http.Request, q *request) {
	if g.opts.NoSessionBinding || !(q.sessionID != "" || q.msg.HasInitialize || q.era == mcpmsg.EraSSE ||
		q.era == mcpmsg.EraStateless && (watchesTasks(q) || strings.HasPrefix(q.msg.Method, "tasks/"))) {
		return
	}
	var id identity.Identity
	if q.verified != nil {
		id = q.verified.Identity()
	} else {
		var ok bool
		if id, ok = identity.FromCredentialItself(r.Header.Get("Authorization"), r.Header.Get("Private-Token")); !ok {
			return // nobody: bound to the ID alone
		}
	}
	var d [session.OpenerLen]byte
	binary.BigEndian.PutUint64(d[:], g.openers.Key(id))
	q.caller = session.OpenerOf(d)
}

// callerFor is whom a use of what opener opened is checked against: the
// request's caller, or, with binding off, the opener itself.
func (g *Gateway) callerFor(opener session.Opener, q *request) session.Opener {
	if g.opts.NoSessionBinding {
		return opener
	}
	return q.caller
}

// refusedUse counts and logs a use that session's Check refused (err not
// nil), of kind session, endpoint or task, and reports whether it was.
func (g *Gateway) refusedUse(kind string, err error, opener, caller session.Opener) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, session.ErrExpired):
		g.metrics.sessionMisses.WithLabelValues("expired").Inc()
	default:
		g.metrics.bindingRefused.WithLabelValues(kind).Inc()
		g.log.Warn("refused a use by a caller other than its opener", "kind", kind,
			"opener", opener.Short(), "caller", caller.Short())
	}
	return true
}

// checkSession says whether the request may use the session c describes.
func (g *Gateway) checkSession(c session.Claims, q *request) bool {
	caller := g.callerFor(c.Opener, q)
	return !g.refusedUse("session", c.Check(caller, time.Now(), g.opts.SessionMaxAge), c.Opener, caller)
}

// checkEndpoint says whether the request may use the 2024-11-05 session
// behind the sealed endpoint e.
func (g *Gateway) checkEndpoint(e session.Endpoint, q *request) bool {
	caller := g.callerFor(e.Opener, q)
	return !g.refusedUse("endpoint", e.Check(caller, time.Now(), g.opts.SessionMaxAge), e.Opener, caller)
}

// checkTask says whether the request may use task t. A task has no issue
// time of its own: its record lives as long as the task's TTL.
func (g *Gateway) checkTask(t session.Task, q *request) bool {
	caller := g.callerFor(t.Opener, q)
	var err error
	if !t.Opener.Admits(caller) {
		err = session.ErrForeign
	}
	return !g.refusedUse("task", err, t.Opener, caller)
}

// newBindingMetrics registers mcpfleet_session_binding_refused_total.
func newBindingMetrics(reg prometheus.Registerer) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpfleet_session_binding_refused_total",
		Help: "Uses of a session, 2024-11-05 endpoint or task by a caller other than the one that opened it, refused as unknown, by kind.",
	}, []string{"kind"})
	reg.MustRegister(c)
	return c
}

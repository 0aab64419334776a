package gateway

import (
	"io"
	"net/http"
	"strings"

	"github.com/mcpfleet/mcpfleet/internal/balance"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// OAuth discovery (the MCP authorization spec; RFC 9728, RFC 8414, OpenID
// Connect Discovery): a client that got 401 fetches the protected resource
// metadata, then the authorization server's, at the server's origin. The
// gateway is that origin, so those paths go to a healthy replica and come
// back untouched; Options.PassthroughPaths adds others (an authorization
// server the replicas host themselves, say). Every other path stays 404.

// wellKnown are the discovery documents, each with its path-suffixed form
// ("/.well-known/oauth-protected-resource/mcp", RFC 9728 section 3.1).
var wellKnown = []string{
	"/.well-known/oauth-protected-resource",
	"/.well-known/oauth-authorization-server",
	"/.well-known/openid-configuration",
}

// passesThrough reports whether path goes to a replica as it is, and which
// methods may: discovery documents are read with GET and HEAD only.
func (g *Gateway) passesThrough(path string) (ok, readOnly bool) {
	for _, p := range wellKnown {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true, true
		}
	}
	for _, p := range g.opts.PassthroughPaths {
		if path == p || (strings.HasSuffix(p, "/") && strings.HasPrefix(path, p)) {
			return true, false
		}
	}
	return false, false
}

// servePassthrough forwards a request to a healthy replica at the same
// path and relays the answer byte for byte: status, every header field but
// the hop-by-hop ones, body. A request that never reached a replica moves
// on to another; one that did is never sent again.
func (g *Gateway) servePassthrough(w http.ResponseWriter, r *http.Request, readOnly bool) {
	rec := g.begin(r)
	defer g.finish(rec)
	if e := g.edgeRefusal(r); e != nil {
		rec.reject(w, e, nil)
		return
	}
	if readOnly && r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		rec.status = http.StatusMethodNotAllowed
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	var body []byte
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		b, err := g.readBody(w, r)
		if err != nil {
			rec.reject(w, err, nil)
			return
		}
		body = b
	}
	snap := g.fleet.Snapshot()
	in := balance.Input{Seq: g.seq.Add(1) - 1, Rnd: g.random()}
	var tried []int
	allOut := !anyEligible(snap)
	for retries := 0; ; retries++ {
		idx := g.pick(snap, nil, balance.Input{Seq: in.Seq + uint64(retries), Rnd: in.Rnd}, tried)
		if idx < 0 {
			rec.reject(w, g.newWorkError(balance.Exhausted(retries), allOut), nil)
			return
		}
		rep := snap.At(idx)
		rec.replica, rec.attempts = rep.Name(), rec.attempts+1
		resp, outcome, err := g.passOnce(r, rep, body)
		if err == nil {
			rec.rep = rep
			defer rep.Release()
			g.relayVerbatim(w, r, resp, rec)
			return
		}
		if r.Context().Err() != nil {
			rec.clientGone = true
			return
		}
		safe := r.Method == http.MethodGet || r.Method == http.MethodHead
		v := balance.Step(balance.Attempt{Outcome: outcome, Safe: safe, Retries: retries, MaxRetries: g.opts.Retries})
		if v != balance.MoveOn {
			rec.reject(w, g.newWorkError(v, allOut), nil)
			return
		}
		tried = append(tried, idx)
	}
}

// passOnce forwards once to rep at the client's path.
func (g *Gateway) passOnce(r *http.Request, rep *upstream.Replica, body []byte) (*http.Response, balance.Outcome, error) {
	rep.Acquire()
	resp, delivered, err := g.fwd.forward(r.Context(), rep, r, body, "", r.URL.RequestURI())
	if err != nil {
		rep.Release()
		if !delivered {
			if r.Context().Err() == nil {
				rep.ReportConnectFailure()
			}
			return nil, balance.NotDelivered, err
		}
		return nil, balance.Delivered, err
	}
	rep.ReportSuccess()
	return resp, balance.Delivered, nil
}

// relayVerbatim copies an answer as it came.
func (g *Gateway) relayVerbatim(w http.ResponseWriter, r *http.Request, resp *http.Response, rec *record) {
	defer resp.Body.Close()
	h := w.Header()
	for k, vv := range resp.Header {
		h[k] = vv
	}
	removeHop(h)
	rec.status, rec.upstreamStatus = resp.StatusCode, resp.StatusCode
	w.WriteHeader(resp.StatusCode)
	if r.Method == http.MethodHead {
		return
	}
	cw := newClientWriter(w, g.opts.WriteTimeout)
	n, err := io.Copy(cw, resp.Body)
	rec.bytes = n
	if err != nil {
		rec.clientGone = rec.clientGone || cw.failed
		rec.upstreamCut = !cw.failed
	}
}

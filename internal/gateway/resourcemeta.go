package gateway

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/mcpfleet/mcpfleet/internal/hostmatch"
)

// The gateway's own protected resource metadata (RFC 9728; the MCP
// authorization spec, "Authorization Server Discovery"): when it verifies
// tokens itself, the 401's challenge names a document that it serves
// itself, at the root well-known URL and at the path-inserted one
// (/.well-known/oauth-protected-resource/mcp, RFC 9728 section 3.1),
// instead of passing the request to replicas that, behind a verifying
// gateway, mostly serve none. A passthrough path that claims the document
// leaves it to the replicas, as before.
//
// The default resource is built from the request's Host, which the client
// chooses: only a Host the Host guard took (allowed_hosts, or loopback
// names on a loopback listener) and that parses as host[:port] is ever
// written into it. A public listener with neither allowed_hosts nor
// auth.resource takes any Host, and so names any: set one of them there.

// prmPath is the well-known path of protected resource metadata.
const prmPath = "/.well-known/oauth-protected-resource"

// resourceMetadataDoc is the document (RFC 9728 section 2).
type resourceMetadataDoc struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers,omitempty"`
	ScopesSupported        []string `json:"scopes_supported,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
}

// servesOwnMetadata reports whether the gateway answers path with its own
// protected resource metadata: verification is on, path is the root or
// the path-inserted document, and no passthrough path claims it.
func (g *Gateway) servesOwnMetadata(path string) bool {
	if g.opts.Auth == nil || (path != prmPath && path != prmPath+strings.TrimSuffix(g.opts.Path, "/")) {
		return false
	}
	for _, p := range g.opts.PassthroughPaths {
		if path == p || (strings.HasSuffix(p, "/") && strings.HasPrefix(path, p)) {
			return false
		}
	}
	return true
}

// serveResourceMetadata answers GET and HEAD with the document, after the
// Host and Origin checks every route to a replica has.
func (g *Gateway) serveResourceMetadata(w http.ResponseWriter, r *http.Request) {
	rec := g.begin(r)
	defer g.finish(rec)
	if e := g.edgeRefusal(r); e != nil {
		rec.reject(w, e, nil)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		rec.status = http.StatusMethodNotAllowed
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	resource, ok := g.resourceURL(r)
	if !ok {
		rec.reject(w, errHost, nil)
		return
	}
	body, _ := json.Marshal(resourceMetadataDoc{ // strings and string lists always marshal
		Resource:               resource,
		AuthorizationServers:   g.opts.AuthorizationServers,
		ScopesSupported:        g.scopesSupported(),
		BearerMethodsSupported: []string{"header"}, // RFC 6750 section 2.1 only: the gateway reads no other
	})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	// The default resource follows the Host: no cache may give one
	// client's answer to a request for another name.
	h.Set("Cache-Control", "no-store")
	rec.status = http.StatusOK // the gateway's own answer: replica none
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// scopesSupported is what the metadata lists as scopes_supported:
// Options.AuthScopesSupported when set, else the scopes the authorization
// rules name (the scopes a client may step up to).
func (g *Gateway) scopesSupported() []string {
	if len(g.opts.AuthScopesSupported) > 0 {
		return g.opts.AuthScopesSupported
	}
	if p := g.authz.Load(); p != nil {
		return p.Scopes()
	}
	return nil
}

// resourceURL is the protected resource's identifier: Options.AuthResource,
// or the listener's scheme, the request's Host and the MCP path. false
// when the Host does not parse as host[:port].
func (g *Gateway) resourceURL(r *http.Request) (string, bool) {
	if g.opts.AuthResource != "" {
		return g.opts.AuthResource, true
	}
	origin, ok := requestOrigin(r)
	return origin + g.opts.Path, ok
}

// requestOrigin is the scheme of the listener and the request's Host,
// lower case; false when the Host does not parse as host[:port].
func requestOrigin(r *http.Request) (string, bool) {
	if _, _, ok := hostmatch.ParseHost(r.Host); !ok {
		return "", false
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + strings.ToLower(r.Host), true
}

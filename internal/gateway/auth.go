package gateway

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/identity"
)

// Authentication (docs/GATEWAY.md, "Deploying in front of an
// OAuth-protected server"): with Options.Auth set, a request to the MCP
// endpoint must carry a bearer JWT that verifies, or it is answered 401
// with a WWW-Authenticate challenge naming the protected resource metadata
// (the MCP authorization spec; RFC 9728 section 5.1) before any replica
// sees it. A verified token's iss and sub are the caller for routing,
// limits and cached answers; the token still goes to the replica, which
// may verify it too.

// authenticate verifies the request's token. It returns the verified
// caller, or false when it answered the request itself.
func (g *Gateway) authenticate(w http.ResponseWriter, r *http.Request, rec *record) (*identity.Verified, bool) {
	v := g.opts.Auth
	if v == nil {
		return nil, true
	}
	c, err := v.Verify(r.Header.Get("Authorization"), time.Now())
	if err == nil {
		g.metrics.auth.WithLabelValues("ok").Inc()
		return &c, true
	}
	challenge := `Bearer resource_metadata="` + g.resourceMetadata(r) + `"`
	body := `{"error":"invalid_request","error_description":"a bearer token is required"}`
	outcome := "missing"
	if !errors.Is(err, identity.ErrNoToken) {
		// RFC 6750 section 3.1; the reason stays in the gateway's own
		// debug log, never the token.
		challenge += `, error="invalid_token"`
		body = `{"error":"invalid_token","error_description":"the token did not verify"}`
		outcome = "invalid"
		g.log.Debug("token refused", "reason", err.Error())
	}
	g.metrics.auth.WithLabelValues(outcome).Inc()
	h := w.Header()
	h.Set("WWW-Authenticate", challenge)
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	rec.rejected, rec.status = true, http.StatusUnauthorized
	w.WriteHeader(http.StatusUnauthorized)
	w.Write([]byte(body))
	return nil, false
}

// resourceMetadata is the URL of the protected resource metadata the
// challenge names: Options.AuthResourceMetadata, or the path-suffixed
// well-known URL at the origin the client used (RFC 9728 section 3.1).
func (g *Gateway) resourceMetadata(r *http.Request) string {
	if g.opts.AuthResourceMetadata != "" {
		return g.opts.AuthResourceMetadata
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + "/.well-known/oauth-protected-resource" + g.opts.Path
}

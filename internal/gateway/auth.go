package gateway

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
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
	c, cached, err := v.VerifyCached(r.Header.Get("Authorization"), time.Now())
	if err == nil {
		g.metrics.auth.WithLabelValues("ok").Inc()
		if cached {
			g.metrics.authCached.Inc()
		}
		return &c, true
	}
	challenge := g.challenge(r)
	body := `{"error":"invalid_request","error_description":"a bearer token is required"}`
	outcome := "missing"
	if !errors.Is(err, identity.ErrNoToken) {
		// RFC 6750 section 3.1; the reason stays in the gateway's own
		// debug log, never the token.
		challenge = withParam(challenge, `error="invalid_token"`)
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
// challenge names: Options.AuthResourceMetadata, or the well-known URL
// inserted into the resource identifier (RFC 9728 section 3.1), which is
// Options.AuthResource or the origin the client used with Path. "" when
// that origin's Host does not parse as host[:port].
func (g *Gateway) resourceMetadata(r *http.Request) string {
	if g.opts.AuthResourceMetadata != "" {
		return g.opts.AuthResourceMetadata
	}
	if g.opts.AuthResource != "" {
		u, err := url.Parse(g.opts.AuthResource) // validated by config
		if err != nil {
			return ""
		}
		return u.Scheme + "://" + u.Host + prmPath + strings.TrimSuffix(u.EscapedPath(), "/")
	}
	origin, ok := requestOrigin(r)
	if !ok {
		return ""
	}
	return origin + prmPath + strings.TrimSuffix(g.opts.Path, "/")
}

// challenge is a 401's WWW-Authenticate value before its error: the
// protected resource metadata's URL (RFC 9728 section 5.1) and, when
// Options.AuthScopesSupported is set, the scope to ask for (the MCP
// authorization spec, "Scope Selection Strategy"; RFC 6750 section 3).
func (g *Gateway) challenge(r *http.Request) string {
	c := "Bearer"
	if u := g.resourceMetadata(r); u != "" {
		c = withParam(c, `resource_metadata="`+u+`"`)
	}
	if s := g.opts.AuthScopesSupported; len(s) > 0 {
		c = withParam(c, `scope="`+strings.Join(s, " ")+`"`)
	}
	return c
}

// withParam adds an auth-param to a challenge (RFC 9110 section 11.2):
// after the scheme and a space, or after a comma.
func withParam(challenge, param string) string {
	if strings.IndexByte(challenge, '=') < 0 {
		return challenge + " " + param
	}
	return challenge + ", " + param
}

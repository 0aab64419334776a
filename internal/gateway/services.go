package gateway

import (
	"net"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/mcpfleet/mcpfleet/internal/hostmatch"
)

// Service is one MCP service of a process that serves several: its own
// gateway (fleet, policies, stores, sealed IDs and metrics label) and the
// requests that are its: by Host when Hosts is set, and by path (the
// gateway's MCP path, its 2024-11-05 paths and passthrough paths).
type Service struct {
	Name string
	// Hosts are exact host names or *.suffix (one label); none means
	// every host.
	Hosts []string
	// Default takes the root OAuth discovery documents
	// (/.well-known/oauth-protected-resource without a path suffix).
	Default bool
	Gateway *Gateway
}

// Services routes each request to the service it is for, and answers
// /healthz and /readyz for all of them. A request no service claims is
// 404 from the gateway itself: it reaches no replica. The list is
// replaced whole by Set (a reload); requests in flight keep the gateway
// they were given.
type Services struct {
	list     atomic.Pointer[[]Service]
	readyAny bool
}

// NewServices routes to list. readyAny makes /readyz ready when one
// service has an eligible replica; otherwise every service must.
func NewServices(list []Service, readyAny bool) *Services {
	s := &Services{readyAny: readyAny}
	s.Set(list)
	return s
}

// Set replaces the services.
func (s *Services) Set(list []Service) {
	l := append([]Service(nil), list...)
	s.list.Store(&l)
}

// List returns the services now routed to.
func (s *Services) List() []Service { return *s.list.Load() }

func (s *Services) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	list := s.List()
	if ambiguousPath(requestPath(r)) {
		writeError(w, errPath, nil) // before a service is picked by its path (path.go)
		return
	}
	switch r.URL.Path {
	case "/healthz":
		if len(list) > 0 {
			list[0].Gateway.serveHealthz(w)
			return
		}
		writeStatus(w, http.StatusOK, `{"status":"ok"}`)
		return
	case "/readyz":
		s.serveReadyz(w, r, list)
		return
	}
	svc := pickService(list, requestHost(r), r.URL.Path)
	if svc == nil {
		http.NotFound(w, r)
		return
	}
	svc.Gateway.ServeHTTP(w, r)
}

// serveReadyz: every service ready (or one, with readyAny), else 503
// naming the first service that is not.
func (s *Services) serveReadyz(w http.ResponseWriter, r *http.Request, list []Service) {
	var first *readiness
	var firstName string
	for _, svc := range list {
		st := svc.Gateway.readiness(r.Context())
		if st.status == "draining" {
			writeStatus(w, st.code(), st.body(""))
			return
		}
		if st.code() == http.StatusOK {
			if s.readyAny {
				writeStatus(w, http.StatusOK, st.body(""))
				return
			}
			continue
		}
		if first == nil {
			first, firstName = &st, svc.Name
		}
	}
	if first == nil && len(list) > 0 {
		writeStatus(w, http.StatusOK, readiness{status: "ready"}.body(""))
		return
	}
	if first == nil {
		first = &readiness{"not ready", "no service is configured"}
	}
	writeStatus(w, first.code(), first.body(firstName))
}

// requestHost is the request's host name, lower-case, without port.
func requestHost(r *http.Request) string {
	h := r.Host
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	return strings.ToLower(strings.TrimSuffix(h, "."))
}

// pickService is the service a request for host and path is for, nil if
// none: one whose hosts take host and that owns path. An OAuth discovery
// document goes to the service whose MCP path is its suffix (RFC 9728,
// section 3.1), the root one to the default service.
func pickService(list []Service, host, path string) *Service {
	for _, doc := range wellKnown {
		rest, ok := strings.CutPrefix(path, doc)
		if !ok || (rest != "" && rest[0] != '/') {
			continue
		}
		for i := range list {
			svc := &list[i]
			if rest == "" && svc.Default || rest != "" && hostmatch.Takes(svc.Hosts, host) && svc.Gateway.opts.Path == rest {
				return svc
			}
		}
		return nil
	}
	for i := range list {
		svc := &list[i]
		if hostmatch.Takes(svc.Hosts, host) && svc.Gateway.owns(path) {
			return svc
		}
	}
	return nil
}

// owns says whether path is one this gateway serves: its MCP endpoint,
// its 2024-11-05 paths, its passthrough paths.
func (g *Gateway) owns(path string) bool {
	if path == g.opts.Path || g.opts.SSEPath != "" && (path == g.opts.SSEPath || path == g.opts.SSEMessagesPath) {
		return true
	}
	for _, p := range g.opts.PassthroughPaths {
		if path == p || (strings.HasSuffix(p, "/") && strings.HasPrefix(path, p)) {
			return true
		}
	}
	return false
}

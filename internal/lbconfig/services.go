package lbconfig

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mcpfleet/mcpfleet/internal/hostmatch"
)

// Several services behind one listener: a request goes to the service one
// of whose hosts is its Host (no hosts: any Host) and one of whose paths
// is its path. A discovery document with a service's path as suffix
// (RFC 9728, section 3.1) is that service's; the root documents are the
// default service's, whatever the Host. Every other request is 404 from
// the balancer itself. These are the gateway's own rules for services.

// wellKnown are the OAuth discovery documents (RFC 9728, RFC 8414, OpenID
// Connect Discovery).
var wellKnown = []string{
	"/.well-known/oauth-protected-resource",
	"/.well-known/oauth-authorization-server",
	"/.well-known/openid-configuration",
}

// route is one path a service answers.
type route struct {
	// Path is the path, or the prefix of the paths, it covers.
	Path string
	// Prefix says Path covers every path under it.
	Prefix bool
	// Rewrite is the path on the replicas; "" means Path.
	Rewrite string
	// Stream says the answers may be SSE streams: not buffered, long
	// timeouts. Discovery documents are short answers.
	Stream bool
}

// routes are the paths s answers: its MCP endpoint, its other paths, and
// its discovery documents.
func (s *Service) routes() []route {
	rs := []route{{Path: s.Path, Stream: true}}
	if s.ReplicaPath != "" && s.ReplicaPath != s.Path {
		rs[0].Rewrite = s.ReplicaPath
	}
	for _, p := range s.Paths {
		rs = append(rs, route{Path: p, Prefix: strings.HasSuffix(p, "/"), Stream: true})
	}
	for _, doc := range wellKnown {
		rs = append(rs, route{Path: doc + s.Path})
	}
	return rs
}

// key tells routes apart as nginx's locations do: an exact path and a
// prefix of the same spelling are two.
func (r route) key() string {
	if r.Prefix {
		return r.Path
	}
	return "= " + r.Path
}

// validateServices checks each service and that no request could be two
// services': their names, hosts and paths.
func (s *Spec) validateServices(bad func(string, ...any) error) error {
	if s.Path != "" || len(s.Upstreams) > 0 {
		return bad("path and upstreams are each service's own when there are services")
	}
	defaults := 0
	for i := range s.Services {
		sv := &s.Services[i]
		if !serviceRE.MatchString(sv.Name) {
			return bad("service %d (%q): name must be 1 to 32 of [a-z0-9_-], starting and ending with a letter or digit", i, sv.Name)
		}
		if err := sv.validate(bad); err != nil {
			return err
		}
		if sv.Default {
			defaults++
		}
		for _, o := range s.Services[:i] {
			if o.Name == sv.Name {
				return bad("service %q: duplicate name", sv.Name)
			}
			if _, meet := hostmatch.Meet(o.Hosts, sv.Hosts); !meet {
				continue
			}
			for _, r := range sv.routes() {
				if slices.ContainsFunc(o.routes(), func(or route) bool { return or.key() == r.key() }) {
					return bad("services %q and %q both answer %s on a host they share", o.Name, sv.Name, r.Path)
				}
			}
		}
	}
	if defaults > 1 {
		return bad("more than one service is the default")
	}
	if defaults == 1 {
		// The root documents are in every host's routes.
		for _, sv := range s.Services {
			for _, r := range sv.routes() {
				if !r.Prefix && slices.Contains(wellKnown, r.Path) {
					return bad("service %q: path %s is the default service's", sv.Name, r.Path)
				}
			}
		}
	}
	return nil
}

// validate checks one service's hosts, paths and fleet.
func (sv *Service) validate(bad func(string, ...any) error) error {
	in := func(format string, a ...any) error {
		return bad("service %q: "+format, append([]any{sv.Name}, a...)...)
	}
	for _, h := range sv.Hosts {
		if len(h) > 253 || !hostRE.MatchString(h) {
			return in("host %q: want a lower-case host name, or *. and one, without port", h)
		}
	}
	if !pathRE.MatchString(sv.Path) {
		return in("path %q: want / and [A-Za-z0-9/._~-]", sv.Path)
	}
	if sv.ReplicaPath != "" && !pathRE.MatchString(sv.ReplicaPath) {
		return in("replica path %q: want / and [A-Za-z0-9/._~-]", sv.ReplicaPath)
	}
	for _, p := range sv.Paths {
		if !pathRE.MatchString(p) || p == "/" {
			return in("path %q: want a path other than /, of [A-Za-z0-9/._~-]", p)
		}
	}
	seen := map[string]bool{}
	for _, r := range sv.routes() {
		if seen[r.key()] {
			return in("path %s given twice", r.Path)
		}
		seen[r.key()] = true
	}
	return sv.Fleet.validate(in)
}

// hostRegexp is the regular expression of a wildcard host: one label (no
// dot) for the star, the rest literal; dots are written [.] so that
// neither nginx's nor HAProxy's parser sees a backslash.
func hostRegexp(pattern string) string {
	return "^[^.]+" + strings.ReplaceAll(strings.TrimPrefix(pattern, "*"), ".", "[.]") + "$"
}

// hostGroup is the services that answer some Host names: the names, and
// the services' indexes in Spec.Services.
type hostGroup struct {
	Hosts    []string
	Services []int
}

// hostGroups splits the hosts into groups that reach the same services:
// first the group of every other host (the services without hosts), then
// one for each distinct set of services reached, in the order the hosts
// first appear. An exact host is also its services' whose wildcard takes
// it, since a balancer matches an exact name before any wildcard.
func (s *Spec) hostGroups() []hostGroup {
	var anyHost []int
	var hosts []string
	for i, sv := range s.Services {
		if len(sv.Hosts) == 0 {
			anyHost = append(anyHost, i)
		}
		for _, h := range sv.Hosts {
			if !slices.Contains(hosts, h) {
				hosts = append(hosts, h)
			}
		}
	}
	groups := []hostGroup{{Services: anyHost}}
	for _, h := range hosts {
		var reached []int
		for i, sv := range s.Services {
			if len(sv.Hosts) == 0 || slices.Contains(sv.Hosts, h) ||
				!strings.HasPrefix(h, "*") && slices.ContainsFunc(sv.Hosts, func(p string) bool { return hostmatch.Match(p, h) }) {
				reached = append(reached, i)
			}
		}
		j := slices.IndexFunc(groups[1:], func(g hostGroup) bool { return slices.Equal(g.Services, reached) })
		if j < 0 {
			groups = append(groups, hostGroup{Hosts: []string{h}, Services: reached})
		} else {
			groups[j+1].Hosts = append(groups[j+1].Hosts, h)
		}
	}
	return groups
}

// upstreamName is the nginx upstream and HAProxy backend of a service.
func upstreamName(sv *Service) string { return "mcp_fleet_" + sv.Name }

// describe is a service's requests in words, for comments.
func describe(sv *Service) string {
	where := "on every host"
	if len(sv.Hosts) > 0 {
		where = "on " + strings.Join(sv.Hosts, ", ")
	}
	d := fmt.Sprintf("service %s: %s %s", sv.Name, sv.Path, where)
	if sv.ReplicaPath != "" && sv.ReplicaPath != sv.Path {
		d += fmt.Sprintf(", sent to %s on its replicas", sv.ReplicaPath)
	}
	if sv.Default {
		d += "; the root discovery documents too"
	}
	return d
}

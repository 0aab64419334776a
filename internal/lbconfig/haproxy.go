package lbconfig

import (
	"bytes"
	"fmt"
	"strings"
	"text/template"
)

// haproxyTemplate is a whole haproxy.cfg: one backend for a fleet, or one
// for each service, chosen by ACLs on the Host and the path.
var haproxyTemplate = template.Must(template.New("haproxy").Parse(`{{define "balance"}}  # Route by a salted digest computed here, never by the credential. The
  # consistent hash moves about 1/N of the clients when one of N replicas
  # leaves, instead of reshuffling them all.
  balance hash var(txn.cred),concat({{.Salt}}),sha1,hex
  hash-type consistent
{{- if .Checks}}
  # Active checks of {{.Health.Path}}: a draining replica answers 503 there while it
  # still serves, so it leaves rotation before its listener closes.
{{- with .Note}}
  # {{.}}
{{- end}}
  option httpchk
  http-check send meth GET uri {{.Health.Path}}{{if .CheckHost}} hdr Host {{.CheckHost}}{{end}}
{{- if not .CheckHost}}
  # No Host header on checks: the replicas' host names differ and
  # health_check.host is unset. A server bound to one host may refuse a
  # check without one; set health_check.host.
{{- end}}
  http-check expect status 200
{{- range .Upstreams}}
  server {{.Name}} {{.Addr}} check inter {{$.Interval}} fall {{$.Health.Fall}} rise {{$.Health.Rise}}
{{- end}}
{{- else}}
  # Health checks are off in the gateway's configuration.
{{- range .Upstreams}}
  server {{.Name}} {{.Addr}}
{{- end}}
{{- end}}
{{- end -}}

# HAProxy configuration for {{.What}}, written by "mcpfleet lbconfig haproxy".
# It follows docs/LBCONFIG.md (after the GitLab MCP server's load-balancing guide).
#
# This file contains the routing salt: keep it mode 0600 and out of version
# control.
{{- if .SaltGenerated}}
#
# The salt below was generated for this file (no secret file was given).
# Keep it stable: a new salt moves every client to another replica once,
# which cools every warm pool at the same time.
{{- end}}
#
# No log lines are configured. If you add "log" and "option httplog", never
# capture the Authorization or PRIVATE-TOKEN header and never log
# var(txn.cred): a routing key in a log is a fingerprint of the token.

global
  # Run under systemd (-Ws) or in the foreground (-db); no "daemon" needed.
  maxconn 4096

defaults
  mode http
  timeout connect {{.ConnectTimeout}}
  timeout http-request 10s
  # An SSE stream may be quiet for a long time between events: mode http
  # forwards each chunk as it arrives, so only these timeouts bound a stream.
  timeout client 1h
  timeout server 1h
  timeout tunnel 1h
  # Retry a failed connection, never a request already delivered: with no
  # "option redispatch" the retry stays on the chosen replica, and retry-on
  # keeps its default (connection failures), so a tools/call that created an
  # issue and lost its answer is not repeated on another replica.
{{- if .Services}}
  # Each service's backend says how many times, and its connect timeout.
{{- else}}
  retries {{.Retries}}
{{- end}}
  # Close each replica connection after its response (an SSE stream holds
  # its own for as long as it lasts); clients keep theirs alive.
  option http-server-close
  # Send small SSE events at once instead of waiting to fill a packet.
  option http-no-delay
  option forwardfor

frontend mcp
  # Plain HTTP. TLS belongs here ("bind ... ssl crt /etc/ssl/private/mcp.pem"),
  # or on a terminator in front that connects to this address.
  bind {{.Listen}}
  http-request set-header X-Forwarded-Proto http
  # The credential, from either header, without the Bearer prefix, so one
  # token written two ways is one key.
  http-request set-var(txn.cred) req.hdr(PRIVATE-TOKEN)
  http-request set-var(txn.cred) req.hdr(Authorization),regsub(^[Bb]earer\ +,) if !{ req.hdr(PRIVATE-TOKEN) -m found }
  # No credential (or an empty one): the client's address, never nothing. An
  # empty key would send every anonymous request to one replica.
  http-request set-var(txn.cred) src,ipmask(32,128) unless { var(txn.cred) -m len gt 0 }
{{- if .Services}}
{{- if .HostVar}}
  # The host name the request is for: lower-case, without a port or a
  # trailing dot. A wildcard host takes one label in place of its star.
  http-request set-var(txn.host) req.hdr(host),field(1,:),lower,regsub([.]$,)
{{- end}}
{{- range $svc := .Services}}
  # The {{.Comment}}.
{{- if .Exact}}
  acl host_{{.Name}} var(txn.host) -m str{{range .Exact}} {{.}}{{end}}
{{- end}}
{{- range .Wild}}
  acl host_{{$svc.Name}} var(txn.host) -m reg {{.}}
{{- end}}
{{- if .Paths}}
  acl path_{{.Name}} path{{range .Paths}} {{.}}{{end}}
{{- end}}
{{- if .Prefixes}}
  acl path_{{.Name}} path_beg{{range .Prefixes}} {{.}}{{end}}
{{- end}}
{{- end}}
{{- with .RootDocs}}
  # The root discovery documents are the default service's, on every host.
  acl root_docs path{{range .Paths}} {{.}}{{end}}
  use_backend {{.Backend}} if root_docs
{{- end}}
{{- range .Services}}
  use_backend {{.Backend}} if {{if .Hosts}}host_{{.Name}} {{end}}path_{{.Name}}
{{- end}}
  # No service answers this host and path: 404 from the balancer itself.
  default_backend mcp_no_service
{{- range .Services}}

backend {{.Backend}}
  timeout connect {{.ConnectTimeout}}
  retries {{.Retries}}
{{- if .Rewrite}}
  # The replicas serve MCP at {{.Rewrite}}.
  http-request set-path {{.Rewrite}} if { path {{.Path}} }
{{- end}}
{{template "balance" .}}
{{- end}}

backend mcp_no_service
  http-request return status 404 content-type text/plain string "no MCP service here\n"
{{- else}}
  default_backend mcp_fleet

backend mcp_fleet
{{template "balance" .}}
{{- end}}
`))

// haproxyBackend is what a backend, and the ACLs that choose it, are made
// from.
type haproxyBackend struct {
	Backend, Name, Comment string
	Salt                   string
	// Note is a comment on the checks.
	Note                string
	Upstreams           []Upstream
	Health              Health
	Checks              bool
	Interval, CheckHost string
	ConnectTimeout      string
	Retries             int
	Hosts               bool
	Exact, Wild         []string
	Paths, Prefixes     []string
	Path, Rewrite       string
}

// newHAProxyBackend writes f's values as HAProxy reads them.
func newHAProxyBackend(backend, salt string, f Fleet) haproxyBackend {
	b := haproxyBackend{Backend: backend, Salt: salt, Upstreams: f.Upstreams, Health: f.Health, Retries: f.Retries, ConnectTimeout: duration(connectTimeout(f))}
	if f.Health.Interval > 0 {
		b.Checks, b.Interval, b.CheckHost = true, duration(f.Health.Interval), checkHost(f)
	}
	return b
}

// haproxyView is what haproxyTemplate fills in: the backend of a fleet,
// or the backends of services.
type haproxyView struct {
	haproxyBackend
	What, Listen  string
	SaltGenerated bool
	Services      []haproxyBackend
	HostVar       bool
	RootDocs      *haproxyBackend
}

// HAProxy returns a haproxy.cfg for the fleet or services in s.
func HAProxy(s Spec) ([]byte, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	v := haproxyView{haproxyBackend: newHAProxyBackend("mcp_fleet", s.Salt, s.fleet()), What: "an MCP fleet", Listen: s.Listen, SaltGenerated: s.SaltGenerated}
	if strings.HasPrefix(v.Listen, ":") {
		v.Listen = "*" + v.Listen
	}
	if len(s.Services) > 0 {
		haproxyServices(&v, s)
	} else {
		path := s.Path
		if path == "" {
			path = "/mcp"
		}
		v.Note = "(the MCP endpoint is " + path + " on every replica; paths pass through unchanged)"
	}
	var b bytes.Buffer
	if err := haproxyTemplate.Execute(&b, v); err != nil {
		return nil, fmt.Errorf("writing haproxy configuration: %w", err)
	}
	return b.Bytes(), nil
}

// haproxyServices fills in a backend and its ACLs for each service.
func haproxyServices(v *haproxyView, s Spec) {
	v.What = "several MCP services"
	v.haproxyBackend = newHAProxyBackend("", "", Fleet{})
	for i := range s.Services {
		sv := &s.Services[i]
		b := newHAProxyBackend(upstreamName(sv), s.Salt, sv.Fleet)
		b.Name, b.Comment, b.Hosts, b.Path = sv.Name, describe(sv), len(sv.Hosts) > 0, sv.Path
		for _, h := range sv.Hosts {
			if strings.HasPrefix(h, "*.") {
				b.Wild = append(b.Wild, hostRegexp(h))
			} else {
				b.Exact = append(b.Exact, h)
			}
		}
		for _, r := range sv.routes() {
			switch {
			case r.Prefix:
				b.Prefixes = append(b.Prefixes, r.Path)
			default:
				b.Paths = append(b.Paths, r.Path)
			}
			if r.Rewrite != "" {
				b.Rewrite = r.Rewrite
			}
		}
		v.HostVar = v.HostVar || b.Hosts
		v.Services = append(v.Services, b)
		if sv.Default {
			v.RootDocs = &haproxyBackend{Backend: b.Backend, Paths: wellKnown}
		}
	}
}

// checkHost is the Host header of health checks: the configured one, else
// the host every replica shares, else none.
func checkHost(f Fleet) string {
	if f.Health.Host != "" {
		return f.Health.Host
	}
	host := f.Upstreams[0].Host
	for _, u := range f.Upstreams[1:] {
		if u.Host != host {
			return ""
		}
	}
	if strings.Contains(host, ":") {
		return "[" + host + "]" // an IPv6 address, as a Host header writes it
	}
	return host
}

package lbconfig

import (
	"bytes"
	"fmt"
	"strings"
	"text/template"
)

// haproxyTemplate is a whole haproxy.cfg.
var haproxyTemplate = template.Must(template.New("haproxy").Parse(`# HAProxy configuration for an MCP fleet, written by "mcpfleet lbconfig haproxy".
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
  retries {{.Retries}}
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
  default_backend mcp_fleet

backend mcp_fleet
  # Route by a salted digest computed here, never by the credential. The
  # consistent hash moves about 1/N of the clients when one of N replicas
  # leaves, instead of reshuffling them all.
  balance hash var(txn.cred),concat({{.Salt}}),sha1,hex
  hash-type consistent
{{- if .Checks}}
  # Active checks of {{.Health.Path}}: a draining replica answers 503 there while it
  # still serves, so it leaves rotation before its listener closes.
  # (the MCP endpoint is {{.Path}} on every replica; paths pass through unchanged)
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
`))

// haproxyView is what haproxyTemplate fills in.
type haproxyView struct {
	Spec
	ConnectTimeout, Interval string
	Checks                   bool
	CheckHost                string
}

// HAProxy returns a haproxy.cfg for the fleet in s.
func HAProxy(s Spec) ([]byte, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	v := haproxyView{Spec: s, ConnectTimeout: duration(connectTimeout(s))}
	if v.Path == "" {
		v.Path = "/mcp"
	}
	if strings.HasPrefix(v.Listen, ":") {
		v.Listen = "*" + v.Listen
	}
	if s.Health.Interval > 0 {
		v.Checks, v.Interval, v.CheckHost = true, duration(s.Health.Interval), checkHost(s)
	}
	var b bytes.Buffer
	if err := haproxyTemplate.Execute(&b, v); err != nil {
		return nil, fmt.Errorf("writing haproxy configuration: %w", err)
	}
	return b.Bytes(), nil
}

// checkHost is the Host header of health checks: the configured one, else
// the host every replica shares, else none.
func checkHost(s Spec) string {
	if s.Health.Host != "" {
		return s.Health.Host
	}
	host := s.Upstreams[0].Host
	for _, u := range s.Upstreams[1:] {
		if u.Host != host {
			return ""
		}
	}
	if strings.Contains(host, ":") {
		return "[" + host + "]" // an IPv6 address, as a Host header writes it
	}
	return host
}

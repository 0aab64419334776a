package lbconfig

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"text/template"
	"time"
)

// nginxParts are the pieces every nginx.conf has: the head (comments,
// globals, log format, the credential maps), an upstream, the proxy
// headers of a server and the streaming lines of a location.
const nginxParts = `{{define "head"}}# nginx configuration for {{.What}}, written by "mcpfleet lbconfig nginx".
# It follows docs/LBCONFIG.md (after the GitLab MCP server's load-balancing guide).
#
# This file contains the routing salt: keep it mode 0600 and out of version
# control. File paths are relative to nginx's prefix; run it as
#     nginx -p /var/lib/mcpfleet-nginx/ -c /etc/mcpfleet/nginx.conf
{{- if .SaltGenerated}}
#
# The salt below was generated for this file (no secret file was given).
# Keep it stable: a new salt moves every client to another replica once,
# which cools every warm pool at the same time.
{{- end}}

pid nginx.pid;
error_log error.log warn;
worker_processes auto;

events {
    worker_connections 4096;
}

http {
    client_body_temp_path client_body_temp;
    proxy_temp_path proxy_temp;
    fastcgi_temp_path fastcgi_temp;
    uwsgi_temp_path uwsgi_temp;
    scgi_temp_path scgi_temp;

    # The access log names no credential and no affinity variable: a routing
    # key in a log is a fingerprint of the token. $uri, not $request, keeps
    # query strings out too. Never add $mcp_affinity, $mcp_credential,
    # $mcp_bearer, $http_authorization or $http_private_token here.
    log_format mcp_safe '$remote_addr [$time_local] "$request_method $uri $server_protocol" '
                        '$status $body_bytes_sent $request_time "$upstream_addr"';
    access_log access.log mcp_safe;

    # The credential, normalised: the bearer token without its scheme and
    # the spaces around it, so one token written two ways is one key.
    map $http_authorization $mcp_bearer {
        default                     "";
        "~*^Bearer[ ]+(?<tok>\S+)$" $tok;
    }

    # Legacy clients send PRIVATE-TOKEN instead.
    map $mcp_bearer $mcp_credential {
        default $mcp_bearer;
        ""      $http_private_token;
    }

    # No credential: fall back to the client's address, never to nothing. An
    # empty key would send every anonymous request to one replica.
    map $mcp_credential $mcp_affinity {
        default $mcp_credential;
        ""      $remote_addr;
    }
{{- end}}

{{- define "upstream"}}    upstream {{.Upstream}} {
        # A consistent hash of the salted credential, never the credential:
        # removing one of N replicas moves about 1/N of the clients instead
        # of reshuffling them all. The salt is a literal inside the key
        # expression, so no variable holds it and no log can name it.
        hash "{{.Salt}}$mcp_affinity" consistent;
{{- if .Passive}}
        # Passive ejection only: open-source nginx has no active health
        # check, so a replica leaves rotation after {{.Health.Fall}} real requests fail
        # within {{.FailTimeout}}, and nothing watches /health turn 503 while it drains.
        # Remove a replica from this list and reload before stopping it.
{{- else}}
        # Health checks are off in the gateway's configuration: no ejection.
{{- end}}
{{- range .Upstreams}}
        server {{.Addr}} max_fails={{$.MaxFails}} fail_timeout={{$.FailTimeout}}; # {{.Name}}
{{- end}}
        # Idle connections to the replicas, reused across requests.
        keepalive 32;
    }
{{- end}}

{{- define "proxy-headers"}}
        # HTTP/1.1 with an empty Connection header lets the upstream keepalive
        # pool reuse connections. These headers apply to every location
        # below, which must not set their own (nginx would drop these).
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_set_header Host              $host;
        proxy_set_header X-Real-IP         $remote_addr;
        proxy_set_header X-Forwarded-For   $proxy_add_x_forwarded_for;
        proxy_set_header X-Forwarded-Proto $scheme;
{{- end}}

{{- define "stream"}}
            # SSE: send each event as it arrives, and stream request bodies.
            proxy_buffering off;
            proxy_request_buffering off;
            # An SSE stream may be quiet for a long time between events.
            proxy_read_timeout 1h;
            proxy_send_timeout 1h;
{{- end}}`

// nginxTemplate is a whole nginx.conf for one fleet. Its file paths are
// relative to nginx's prefix (-p), so one directory holds everything it
// writes.
var nginxTemplate = template.Must(template.Must(template.New("nginx").Parse(nginxParts)).Parse(`{{template "head" .}}

{{template "upstream" .}}

    server {
        # Plain HTTP. TLS belongs here ("listen 443 ssl;" with
        # ssl_certificate and ssl_certificate_key), or on a terminator in
        # front that connects to this address.
        listen {{.Listen}};
        server_name _;
{{- if .MaxBody}}
        client_max_body_size {{.MaxBody}};
{{- end}}
{{template "proxy-headers"}}
        proxy_connect_timeout {{.ConnectTimeout}};

        # Retry only what never reached a replica: a connection error or a
        # connect timeout. Never add non_idempotent or http_500: both repeat
        # a delivered request, and a tools/call that created an issue and
        # lost its answer would create it twice. Every location inherits this.
{{- if .Tries}}
        proxy_next_upstream error timeout;
        proxy_next_upstream_tries {{.Tries}};
{{- else}}
        proxy_next_upstream off;
{{- end}}

        # The MCP endpoint is {{.Path}} on every replica; this location passes
        # every path through unchanged.
        location / {
            proxy_pass http://{{.Upstream}};
{{template "stream"}}
        }

        # OAuth protected resource metadata (RFC 9728): a short answer any
        # replica gives, buffered as usual.
        location /.well-known/oauth-protected-resource {
            proxy_pass http://{{.Upstream}};
        }
    }
}
`))

// nginxServicesTemplate is a whole nginx.conf for several services: an
// upstream each, and a server for each group of hosts that reach the
// same services.
var nginxServicesTemplate = template.Must(template.Must(template.New("nginx").Parse(nginxParts)).Parse(`{{template "head" .}}
{{- range .Fleets}}

    # The {{.Comment}}.
{{template "upstream" .}}
{{- end}}
{{- range $i, $srv := .Servers}}

    server {
{{- if eq $i 0}}
        # Plain HTTP. TLS belongs in each server ("listen 443 ssl;" with
        # ssl_certificate and ssl_certificate_key), or on a terminator in
        # front that connects to this address.
        # {{.Comment}}
        listen {{$.Listen}} default_server;
        server_name _;
{{- else}}
        # {{.Comment}}
        listen {{$.Listen}};
        server_name{{range .Names}} {{.}}{{end}};
{{- end}}
{{template "proxy-headers"}}

        # Each location retries only what never reached a replica: a
        # connection error or a connect timeout. Never add non_idempotent or
        # http_500: both repeat a delivered request, and a tools/call that
        # created an issue and lost its answer would create it twice.
{{- range .Locations}}
{{- if .Comment}}

        # {{.Comment}}
{{- end}}
        location {{.Match}} {
            proxy_pass {{.Pass}};
            proxy_connect_timeout {{.Fleet.ConnectTimeout}};
{{- if .Fleet.Tries}}
            proxy_next_upstream error timeout;
            proxy_next_upstream_tries {{.Fleet.Tries}};
{{- else}}
            proxy_next_upstream off;
{{- end}}
{{- if .Stream}}
{{- if .Fleet.MaxBody}}
            client_max_body_size {{.Fleet.MaxBody}};
{{- end}}
{{template "stream"}}
{{- end}}
        }
{{- end}}

        # No service answers any other path here.
        location / {
            return 404;
        }
    }
{{- end}}
}
`))

// nginxFleet is what an upstream and its locations are made from.
type nginxFleet struct {
	Upstream, Comment           string
	Salt                        string
	Upstreams                   []Upstream
	Health                      Health
	Passive                     bool
	MaxFails                    int
	FailTimeout, ConnectTimeout string
	MaxBody                     string
	Tries                       int
}

// newNginxFleet writes f's values as nginx reads them.
func newNginxFleet(upstream, salt string, f Fleet) nginxFleet {
	v := nginxFleet{Upstream: upstream, Salt: salt, Upstreams: f.Upstreams, Health: f.Health, ConnectTimeout: duration(connectTimeout(f))}
	if f.Health.Interval > 0 {
		// max_fails=0 turns ejection off, as a zero interval does in the
		// gateway. fail_timeout is five intervals: 10s at the default 2s.
		v.Passive, v.MaxFails, v.FailTimeout = true, f.Health.Fall, duration(5*f.Health.Interval)
	} else {
		v.FailTimeout = "10s"
	}
	if f.MaxBodyBytes > 0 {
		v.MaxBody = fmt.Sprintf("%dk", (f.MaxBodyBytes+1023)/1024)
	}
	if f.Retries > 0 {
		v.Tries = f.Retries + 1 // the first try counts
	}
	return v
}

// nginxView is what nginxTemplate fills in.
type nginxView struct {
	nginxFleet
	What, Listen, Path string
	SaltGenerated      bool
}

// nginxServicesView is what nginxServicesTemplate fills in.
type nginxServicesView struct {
	What, Listen  string
	SaltGenerated bool
	Fleets        []nginxFleet
	Servers       []nginxServer
}

// nginxServer is one server block: the hosts it takes (none: every other
// host) and its locations.
type nginxServer struct {
	Names     []string
	Comment   string
	Locations []nginxLocation
}

// nginxLocation is one location: its match, where it goes, and the
// fleet's retries and bounds.
type nginxLocation struct {
	Match, Pass, Comment string
	Stream               bool
	Fleet                *nginxFleet
}

// Nginx returns an nginx.conf for the fleet or services in s.
func Nginx(s Spec) ([]byte, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	listen := strings.TrimPrefix(s.Listen, ":")
	tmpl, v := nginxTemplate, any(nil)
	if len(s.Services) > 0 {
		tmpl, v = nginxServicesTemplate, nginxServices(s, listen)
	} else {
		sv := nginxView{nginxFleet: newNginxFleet("mcp_fleet", s.Salt, s.fleet()), What: "an MCP fleet", Listen: listen, Path: s.Path, SaltGenerated: s.SaltGenerated}
		if sv.Path == "" {
			sv.Path = "/mcp"
		}
		v = sv
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, v); err != nil {
		return nil, fmt.Errorf("writing nginx configuration: %w", err)
	}
	return b.Bytes(), nil
}

// nginxServices lays out the upstreams and servers of several services.
func nginxServices(s Spec, listen string) nginxServicesView {
	v := nginxServicesView{What: "several MCP services", Listen: listen, SaltGenerated: s.SaltGenerated}
	for i := range s.Services {
		sv := &s.Services[i]
		f := newNginxFleet(upstreamName(sv), s.Salt, sv.Fleet)
		f.Comment = describe(sv)
		v.Fleets = append(v.Fleets, f)
	}
	def := slices.IndexFunc(s.Services, func(sv Service) bool { return sv.Default })
	for gi, g := range s.hostGroups() {
		srv := nginxServer{}
		for _, h := range g.Hosts {
			if strings.HasPrefix(h, "*.") {
				h = "~" + hostRegexp(h)
			}
			srv.Names = append(srv.Names, h)
		}
		var names []string
		for _, i := range g.Services {
			sv := &s.Services[i]
			names = append(names, sv.Name)
			for ri, r := range sv.routes() {
				loc := nginxLocation{Match: r.key(), Pass: "http://" + upstreamName(sv) + r.Rewrite, Stream: r.Stream, Fleet: &v.Fleets[i]}
				if ri == 0 {
					loc.Comment = "The " + describe(sv) + "."
				}
				srv.Locations = append(srv.Locations, loc)
			}
		}
		if def >= 0 {
			for di, doc := range wellKnown {
				loc := nginxLocation{Match: "= " + doc, Pass: "http://" + v.Fleets[def].Upstream, Fleet: &v.Fleets[def]}
				if di == 0 {
					loc.Comment = "The root discovery documents: the default service's, " + s.Services[def].Name + "."
				}
				srv.Locations = append(srv.Locations, loc)
			}
		}
		who := "no service"
		if len(names) > 0 {
			who = "service " + strings.Join(names, ", ")
			if len(names) > 1 {
				who = "services " + strings.Join(names, ", ")
			}
		}
		if gi == 0 {
			srv.Comment = "Any host that no server below names: " + who + "."
		} else {
			srv.Comment = strings.Join(g.Hosts, ", ") + ": " + who + "."
		}
		v.Servers = append(v.Servers, srv)
	}
	return v
}

// connectTimeout is f.ConnectTimeout or its default.
func connectTimeout(f Fleet) time.Duration {
	if f.ConnectTimeout <= 0 {
		return 5 * time.Second
	}
	return f.ConnectTimeout
}

// duration formats d in whole seconds or, below a second or with a
// fraction, milliseconds: a form both nginx and HAProxy read.
func duration(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return fmt.Sprintf("%dms", max(1, d/time.Millisecond))
}

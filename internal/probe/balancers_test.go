package probe

import (
	"errors"
	"github.com/mcpfleet/mcpfleet/internal/testproc"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"text/template"
)

// These tests put the probe behind real nginx and HAProxy, configured as
// the load-balancing guide configures them (a consistent hash of a salted
// digest of the bearer credential), in front of three real test servers.
// Each also runs a broken variant whose hash key never resolves, which both
// balancers answer by falling back to round robin in silence: the probe
// must catch it ("prove affinity, don't assume it").
//
// Without the balancer installed the tests skip, unless
// MCPFLEET_REQUIRE_BALANCERS=1, when they fail. On Debian the packages are
// nginx (or nginx-light) and haproxy.

const salt = "a-long-random-per-deployment-salt"

// nginxConf follows the guide's nginx section, with every path inside the
// test's directory. The key is the salted credential; Broken hashes a
// header no client sends.
var nginxConf = template.Must(template.New("nginx").Parse(`
master_process off;
pid {{.Dir}}/nginx.pid;
error_log {{.Dir}}/error.log warn;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path {{.Dir}}/client_body;
    proxy_temp_path {{.Dir}}/proxy;
    fastcgi_temp_path {{.Dir}}/fastcgi;
    uwsgi_temp_path {{.Dir}}/uwsgi;
    scgi_temp_path {{.Dir}}/scgi;

    map $host $mcp_salt { default "{{.Salt}}"; }
    map $http_authorization $mcp_bearer {
        default                     "";
        "~*^Bearer[ ]+(?<tok>\S+)$" $tok;
    }
    map $mcp_bearer $mcp_credential { default $mcp_bearer; "" $http_private_token; }
    map $mcp_credential $mcp_affinity { default $mcp_credential; "" $remote_addr; }

    upstream mcp {
{{- if .Broken}}
        hash $http_x_no_such_header consistent;
{{- else}}
        hash "$mcp_salt$mcp_affinity" consistent;
{{- end}}
{{- range .Replicas}}
        server {{.}} max_fails=2 fail_timeout=10s;
{{- end}}
        keepalive 32;
    }
    server {
        listen {{.Listen}};
        location / {
            proxy_pass http://mcp;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $host;
            proxy_buffering off;
            proxy_request_buffering off;
            proxy_next_upstream error timeout;
            proxy_next_upstream_tries 2;
        }
    }
}
`))

// haproxyConf follows the guide's HAProxy section, with a Host header on
// the health check; Broken hashes a header no client sends.
var haproxyConf = template.Must(template.New("haproxy").Parse(`
defaults
  mode http
  timeout connect 2s
  timeout client 30s
  timeout server 30s
  retries 1
  option http-server-close

frontend mcp
  bind {{.Listen}}
  http-request set-var(txn.cred) req.hdr(PRIVATE-TOKEN)
  http-request set-var(txn.cred) req.hdr(Authorization),regsub(^[Bb]earer\ +,) if !{ req.hdr(PRIVATE-TOKEN) -m found }
  http-request set-var(txn.cred) src,ipmask(32,128) if !{ var(txn.cred) -m found }
  default_backend mcp_servers

backend mcp_servers
{{- if .Broken}}
  balance hash req.hdr(X-No-Such-Header)
{{- else}}
  balance hash var(txn.cred),concat({{.Salt}}),sha1,hex
{{- end}}
  hash-type consistent
  option httpchk
  http-check send meth GET uri /health hdr Host localhost
  http-check expect status 200
{{- range $i, $r := .Replicas}}
  server r{{$i}} {{$r}} check inter 2s fall 2 rise 2
{{- end}}
`))

// balancerConf is what the configuration templates fill in.
type balancerConf struct {
	Dir, Listen, Salt string
	Replicas          []string // host:port of each replica
	Broken            bool     // hash a key that never resolves
}

func TestNginxProvesAffinity(t *testing.T) {
	bin := testproc.FindBinary(t, "nginx", "nginx", "MCPFLEET_REQUIRE_BALANCERS")
	testBalancer(t, func(t *testing.T, c balancerConf) string {
		file := writeConf(t, c, nginxConf, "nginx.conf")
		testproc.Start(t, bin, "-p", c.Dir+"/", "-e", c.Dir+"/error.log", "-c", file, "-g", "daemon off;")
		return c.Listen
	})
}

func TestHAProxyProvesAffinity(t *testing.T) {
	bin := testproc.FindBinary(t, "haproxy", "haproxy", "MCPFLEET_REQUIRE_BALANCERS")
	testBalancer(t, func(t *testing.T, c balancerConf) string {
		file := writeConf(t, c, haproxyConf, "haproxy.cfg")
		testproc.Start(t, bin, "-f", file, "-db")
		return c.Listen
	})
}

// testBalancer starts a fleet of three replicas and, through the balancer
// that start runs, probes the correct configuration (sticky, spread over
// all three) and the broken one (not sticky).
func testBalancer(t *testing.T, start func(*testing.T, balancerConf) string) {
	fleet := startFleet(t, "r1", "r2", "r3")
	var replicas []string
	for _, u := range fleet {
		replicas = append(replicas, u.Host)
	}
	slices.Sort(replicas)
	for _, broken := range []bool{false, true} {
		t.Run(map[bool]string{false: "salted credential hash", true: "unresolved key"}[broken], func(t *testing.T) {
			c := balancerConf{Dir: t.TempDir(), Listen: testproc.FreeAddr(t), Salt: salt, Replicas: replicas, Broken: broken}
			addr := start(t, c)
			testproc.WaitReady(t, "http://"+addr+"/health")
			_, s := run(t, "http://"+addr+"/mcp")
			err := s.ExpectSticky()
			switch {
			case !broken && err != nil:
				t.Errorf("ExpectSticky() = %v, want nil; summary %+v", err, s)
			case !broken && len(s.Replicas) != 3:
				t.Errorf("identities reached %d replicas, want all 3: %+v", len(s.Replicas), s.Replicas)
			case broken && !errors.Is(err, ErrNotSticky):
				t.Errorf("ExpectSticky() = %v through an unresolved hash key, want ErrNotSticky", err)
			case broken && (s.Errors != 0 || s.Stickiness > 0.5):
				t.Errorf("stickiness %.2f, %d errors; want round robin to show, without errors", s.Stickiness, s.Errors)
			}
			t.Logf("stickiness %s, spread %+v", Percent(s.Stickiness), s.Replicas)
		})
	}
}

// writeConf fills tmpl with c into a file in c.Dir and returns its path.
func writeConf(t *testing.T, c balancerConf, tmpl *template.Template, name string) string {
	t.Helper()
	var b strings.Builder
	if err := tmpl.Execute(&b, c); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(c.Dir, name)
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

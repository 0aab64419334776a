package lbconfig

import (
	"errors"
	"github.com/mcpfleet/mcpfleet/internal/testproc"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/config"
)

const testSalt = "0123456789abcdef0123456789abcdef0123456789abcdef"

// testSpec is a fleet of three replicas with the gateway's default health
// check and retries.
func testSpec(listen string, addrs ...string) Spec {
	s := Spec{
		Listen: listen, Path: "/mcp", Salt: testSalt, Retries: 1, ConnectTimeout: 2 * time.Second,
		MaxBodyBytes: 4 << 20,
		Health:       Health{Interval: 2 * time.Second, Fall: 2, Rise: 2, Path: "/health"},
	}
	for i, a := range addrs {
		host, port, _ := strings.Cut(a, ":")
		n := 0
		for _, c := range port {
			n = n*10 + int(c-'0')
		}
		s.Upstreams = append(s.Upstreams, Upstream{Name: "r" + string(rune('1'+i)), Host: host, Port: n})
	}
	return s
}

func defaultSpec() Spec {
	return testSpec("127.0.0.1:8080", "127.0.0.1:9001", "127.0.0.1:9002", "127.0.0.1:9003")
}

func TestNginxFollowsTheGuide(t *testing.T) {
	out, err := Nginx(defaultSpec())
	if err != nil {
		t.Fatal(err)
	}
	conf := string(out)
	for _, want := range []string{
		`"~*^Bearer[ ]+(?<tok>\S+)$" $tok;`,
		`""      $http_private_token;`,
		`""      $remote_addr;`,
		`hash "` + testSalt + `$mcp_affinity" consistent;`,
		`server 127.0.0.1:9001 max_fails=2 fail_timeout=10s; # r1`,
		`keepalive 32;`,
		`proxy_http_version 1.1;`,
		`proxy_set_header Connection "";`,
		`proxy_set_header Host              $host;`,
		`proxy_set_header X-Forwarded-For   $proxy_add_x_forwarded_for;`,
		`proxy_buffering off;`,
		`proxy_request_buffering off;`,
		`proxy_read_timeout 1h;`,
		`proxy_next_upstream error timeout;`,
		`proxy_next_upstream_tries 2;`,
		`listen 127.0.0.1:8080;`,
		`access_log access.log mcp_safe;`,
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("nginx.conf lacks %q", want)
		}
	}
	if n := strings.Count(conf, testSalt); n != 1 {
		t.Errorf("salt appears %d times, want once (in the hash key)", n)
	}
	checkNoDirective(t, conf, "non_idempotent", "http_500")
	// Every log_format, continuation lines included, up to its semicolon.
	formats := regexp.MustCompile(`(?s)log_format[^;]*;`).FindAllString(stripComments(conf), -1)
	if len(formats) == 0 {
		t.Fatal("no log_format")
	}
	for _, f := range formats {
		for _, leak := range []string{testSalt, "mcp_affinity", "mcp_credential", "mcp_bearer", "http_authorization", "http_private_token", "$request "} {
			if strings.Contains(f, leak) {
				t.Errorf("log_format names %q: %s", leak, f)
			}
		}
	}
}

func TestHAProxyFollowsTheGuide(t *testing.T) {
	out, err := HAProxy(defaultSpec())
	if err != nil {
		t.Fatal(err)
	}
	conf := string(out)
	for _, want := range []string{
		`http-request set-var(txn.cred) req.hdr(PRIVATE-TOKEN)`,
		`http-request set-var(txn.cred) req.hdr(Authorization),regsub(^[Bb]earer\ +,) if !{ req.hdr(PRIVATE-TOKEN) -m found }`,
		`http-request set-var(txn.cred) src,ipmask(32,128) unless { var(txn.cred) -m len gt 0 }`,
		`balance hash var(txn.cred),concat(` + testSalt + `),sha1,hex`,
		`hash-type consistent`,
		`retries 1`,
		`option httpchk`,
		`http-check send meth GET uri /health hdr Host 127.0.0.1`,
		`http-check expect status 200`,
		`server r1 127.0.0.1:9001 check inter 2s fall 2 rise 2`,
		`timeout server 1h`,
		`timeout tunnel 1h`,
		`bind 127.0.0.1:8080`,
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("haproxy.cfg lacks %q", want)
		}
	}
	checkNoDirective(t, conf, "redispatch", "retry-on", "capture request header")
}

func TestRetriesAndChecksOff(t *testing.T) {
	s := defaultSpec()
	s.Retries, s.Health.Interval = 0, 0
	n, err := Nginx(s)
	if err != nil {
		t.Fatal(err)
	}
	h, err := HAProxy(s)
	if err != nil {
		t.Fatal(err)
	}
	for conf, want := range map[string][]string{
		string(n): {"proxy_next_upstream off;", "max_fails=0"},
		string(h): {"retries 0", "server r1 127.0.0.1:9001\n"},
	} {
		for _, w := range want {
			if !strings.Contains(conf, w) {
				t.Errorf("configuration lacks %q", w)
			}
		}
	}
	if strings.Contains(string(h), "option httpchk") {
		t.Error("haproxy.cfg checks health with checks off")
	}
}

// checkNoDirective fails if any non-comment line of conf contains one of
// words.
func checkNoDirective(t *testing.T, conf string, words ...string) {
	t.Helper()
	body := stripComments(conf)
	for _, w := range words {
		if strings.Contains(body, w) {
			t.Errorf("configuration uses %q outside comments", w)
		}
	}
}

func stripComments(conf string) string {
	var b strings.Builder
	for _, line := range strings.Split(conf, "\n") {
		if i := strings.Index(line, "#"); i >= 0 && !strings.Contains(line, `"~*^`) {
			line = line[:i]
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

func TestSpecRejectsUnsafeValues(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*Spec)
		want   string
	}{
		{"name with a brace", func(s *Spec) { s.Upstreams[1].Name = "r2;}" }, `upstream 1 ("r2;}")`},
		{"name with a space", func(s *Spec) { s.Upstreams[0].Name = "a b" }, `"a b"`},
		{"duplicate name", func(s *Spec) { s.Upstreams[1].Name = "r1" }, `upstream "r1": duplicate`},
		{"host with a semicolon", func(s *Spec) { s.Upstreams[2].Host = "evil;host" }, `upstream "r3": host`},
		{"bad port", func(s *Spec) { s.Upstreams[0].Port = 0 }, `upstream "r1": port`},
		{"short salt", func(s *Spec) { s.Salt = "short" }, "salt"},
		{"salt with a quote", func(s *Spec) { s.Salt = strings.Repeat("a", 40) + `"` }, "salt"},
		{"listen", func(s *Spec) { s.Listen = "127.0.0.1:80; x" }, "listen"},
		{"health path", func(s *Spec) { s.Health.Path = "/health uri /x" }, "health path"},
		{"health host", func(s *Spec) { s.Health.Host = "a b" }, "health host"},
		{"no upstreams", func(s *Spec) { s.Upstreams = nil }, "at least one upstream"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := defaultSpec()
			s.Upstreams = append([]Upstream(nil), s.Upstreams...)
			tc.mutate(&s)
			for name, emit := range map[string]func(Spec) ([]byte, error){"Nginx": Nginx, "HAProxy": HAProxy} {
				_, err := emit(s)
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s() = %v, want an error naming %q", name, err, tc.want)
				}
				if err != nil && strings.Contains(err.Error(), testSalt) {
					t.Errorf("%s() error echoes the salt", name)
				}
			}
		})
	}
}

func TestFromConfig(t *testing.T) {
	parse := func(t *testing.T, y string) config.Config {
		t.Helper()
		c, err := config.Parse([]byte(y))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	salt := []byte("0123456789abcdef")
	t.Run("upstreams and listen override", func(t *testing.T) {
		c := parse(t, "listen: 127.0.0.1:9000\nupstreams:\n  - name: a\n    url: http://10.0.0.1:8080/mcp\n  - url: http://[::1]:8081/mcp\n")
		s, err := FromConfig(c, salt, false, "[::]:8443")
		if err != nil {
			t.Fatal(err)
		}
		if s.Listen != "[::]:8443" || s.Path != "/mcp" || s.Salt != "30313233343536373839616263646566" || s.Retries != 1 {
			t.Errorf("spec %+v", s)
		}
		if got := s.Upstreams[1]; got.Name != "r-1--8081" || got.Addr() != "[::1]:8081" {
			t.Errorf("unnamed IPv6 upstream = %+v (%s)", got, got.Addr())
		}
	})
	for _, tc := range []struct{ name, yaml, want string }{
		{"discovery", "discovery:\n  dns_name: mcp.svc\n  port: 8080\n", "discovery.dns_name"},
		{"https", "upstreams:\n  - name: a\n    url: https://10.0.0.1/mcp\n", `upstream "a": scheme "https"`},
		{"paths differ", "upstreams:\n  - name: a\n    url: http://10.0.0.1/mcp\n  - name: b\n    url: http://10.0.0.2/v2/mcp\n", `upstream "b": path`},
		{"unsafe name", "upstreams:\n  - name: \"a;b\"\n    url: http://10.0.0.1/mcp\n", `"a;b"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromConfig(parse(t, tc.yaml), salt, false, "")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("FromConfig() = %v, want an error naming %q", err, tc.want)
			}
			if tc.name == "discovery" && !errors.Is(err, ErrDiscovery) {
				t.Errorf("FromConfig() = %v, want ErrDiscovery", err)
			}
		})
	}
}

// TestBalancersAcceptTheFiles runs "nginx -t" and "haproxy -c" on the
// emitted files.
func TestBalancersAcceptTheFiles(t *testing.T) {
	checkBalancersAccept(t, func(listen string) Spec {
		return testSpec(listen, "127.0.0.1:9001", "127.0.0.1:9002", "localhost:9003")
	})
}

// checkBalancersAccept runs "nginx -t" and "haproxy -c" on the files
// emitted for spec on IPv4, any-address and IPv6 listeners.
func checkBalancersAccept(t *testing.T, spec func(listen string) Spec) {
	for _, listen := range []string{"127.0.0.1:18080", ":18080", "[::1]:18080"} {
		s := spec(listen)
		t.Run("nginx "+listen, func(t *testing.T) {
			bin := testproc.FindBinary(t, "nginx", "nginx", "MCPFLEET_REQUIRE_BALANCERS")
			dir := t.TempDir()
			file := emitFile(t, Nginx, s, dir, "nginx.conf")
			checkCommand(t, bin, "-t", "-p", dir+"/", "-e", filepath.Join(dir, "error.log"), "-c", file)
		})
		t.Run("haproxy "+listen, func(t *testing.T) {
			bin := testproc.FindBinary(t, "haproxy", "haproxy", "MCPFLEET_REQUIRE_BALANCERS")
			file := emitFile(t, HAProxy, s, t.TempDir(), "haproxy.cfg")
			checkCommand(t, bin, "-c", "-f", file)
		})
	}
}

func emitFile(t *testing.T, emit func(Spec) ([]byte, error), s Spec, dir, name string) string {
	t.Helper()
	out, err := emit(s)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, name)
	if err := os.WriteFile(file, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

func checkCommand(t *testing.T, bin string, args ...string) {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, out)
	}
	if strings.Contains(string(out), "[WARNING]") {
		t.Errorf("%s warns:\n%s", filepath.Base(bin), out)
	}
}

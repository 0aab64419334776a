package hostmatch

import (
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

// originCorpus are Origin values a hostile page or client may send, each
// with what the strict parse makes of it ("" for a refusal).
var originCorpus = []struct{ in, want string }{
	{"http://example.com", "http://example.com"},
	{"https://example.com", "https://example.com"},
	{"HTTP://EXAMPLE.COM", "http://example.com"},
	{"https://Example.Com:8443", "https://example.com:8443"},
	{"http://example.com:80", "http://example.com"},         // explicit default port
	{"https://example.com:443", "https://example.com"},      // explicit default port
	{"http://example.com:443", "http://example.com:443"},    // another scheme's default
	{"https://example.com:80", "https://example.com:80"},    //
	{"http://example.com.", "http://example.com"},           // trailing dot
	{"http://example.com.:8080", "http://example.com:8080"}, //
	{"http://127.0.0.1:9090", "http://127.0.0.1:9090"},
	{"http://[::1]:9090", "http://[::1]:9090"},
	{"http://[0:0::1]", "http://[::1]"},
	{"http://[::FFFF:127.0.0.1]", "http://[::ffff:127.0.0.1]"},
	{"http://mcp_internal.example", "http://mcp_internal.example"},
	{"null", ""},
	{"", ""},
	{"http://", ""},
	{"http://:8080", ""},
	{"http://example.com/", ""},
	{"http://example.com/path", ""},
	{"http://example.com?x", ""},
	{"http://example.com#x", ""},
	{"http://user@example.com", ""},
	{"http://user:pass@example.com", ""},
	{"http://evil.example@example.com", ""},
	{"http://example.com:", ""},
	{"http://example.com:080", ""},
	{"http://example.com:0", ""},
	{"http://example.com:65536", ""},
	{"http://example.com:99999", ""},
	{"http://example.com:+80", ""},
	{"http://example.com:8a", ""},
	{"http://example.com:80:80", ""},
	{"http://example..com", ""},
	{"http://.example.com", ""},
	{"http://example.com..", ""},
	{"http://exa mple.com", ""},
	{"http://example.com\t", ""},
	{"http://ex%61mple.com", ""},
	{"http://exa\\mple.com", ""},
	{"http://[::1", ""},
	{"http://[::1]x", ""},
	{"http://[127.0.0.1]", ""},
	{"http://[fe80::1%25eth0]", ""},
	{"http://::1", ""},
	{"ftp://example.com", ""},
	{"file://", ""},
	{"chrome-extension://abcdef", ""},
	{"//example.com", ""},
	{"example.com", ""},
	{"http:/example.com", ""},
	{"http:\\\\example.com", ""},
	{"http://example.com, http://evil.example", ""},
	{"http://ex\u00e4mple.com", ""}, // a browser sends the A-label
	{"http://" + strings.Repeat("a", 64) + ".example", ""},
}

func TestParseOrigin(t *testing.T) {
	for _, tt := range originCorpus {
		o, err := ParseOrigin(tt.in)
		got := ""
		if err == nil {
			got = o.String()
		}
		if got != tt.want {
			t.Errorf("ParseOrigin(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// FuzzParseOrigin: what the strict parse takes, net/url takes too, with
// the same scheme and host, and no userinfo, path, query or fragment; and
// the canonical spelling parses back to itself.
func FuzzParseOrigin(f *testing.F) {
	for _, tt := range originCorpus {
		f.Add(tt.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, err := ParseOrigin(s)
		if err != nil {
			return
		}
		u, uerr := url.Parse(s)
		if uerr != nil {
			t.Fatalf("ParseOrigin took %q, net/url refused it: %v", s, uerr)
		}
		if u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
			t.Fatalf("ParseOrigin took %q, which has more than scheme, host and port: %#v", s, u)
		}
		if strings.ToLower(u.Scheme) != o.Scheme {
			t.Fatalf("%q: scheme %q, net/url %q", s, o.Scheme, u.Scheme)
		}
		host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
		if ip, err := netip.ParseAddr(host); err == nil {
			host = ip.String()
		}
		if host != o.Host {
			t.Fatalf("%q: host %q, net/url %q", s, o.Host, host)
		}
		back, err := ParseOrigin(o.String())
		if err != nil || back != o {
			t.Fatalf("%q: %q parses back to %v, %v", s, o.String(), back, err)
		}
	})
}

func TestGuard(t *testing.T) {
	loop := netip.MustParseAddr("127.0.0.1")
	pub := netip.MustParseAddr("192.0.2.10") // documentation range (RFC 5737)
	app, _ := ParseOrigin("https://app.example.com")
	tests := []struct {
		name    string
		g       Guard
		host    string
		origins []string
		local   netip.Addr
		want    error
	}{
		{"loopback listener, loopback host", Guard{}, "127.0.0.1:8080", nil, loop, nil},
		{"loopback listener, localhost", Guard{}, "LOCALHOST:8080", nil, loop, nil},
		{"loopback listener, foreign host", Guard{}, "evil.example:8080", nil, loop, ErrHost},
		{"loopback listener, any host", Guard{AnyHost: true}, "evil.example:8080", nil, loop, nil},
		{"public listener, any host", Guard{}, "evil.example", nil, pub, nil},
		{"public listener, pinned, pinned host", Guard{Hosts: []string{"mcp.example.com"}}, "MCP.example.com.:443", nil, pub, nil},
		{"public listener, pinned, other host", Guard{Hosts: []string{"mcp.example.com"}}, "other.example.com", nil, pub, ErrHost},
		{"public listener, pinned, the address", Guard{Hosts: []string{"mcp.example.com"}}, "192.0.2.10", nil, pub, ErrHost},
		{"pinned by pattern", Guard{Hosts: []string{"*.example.com"}}, "a.example.com", nil, pub, nil},
		{"public listener, malformed host", Guard{}, "a b", nil, pub, nil}, // as net/http takes it
		{"public listener, no host", Guard{}, "", nil, pub, nil},           // HTTP/1.0
		{"loopback listener, malformed host", Guard{}, "a b", nil, loop, ErrHost},
		{"pinned, malformed host", Guard{Hosts: []string{"a"}}, "a b", nil, pub, ErrHost},
		{"pinned, no host", Guard{Hosts: []string{"a"}}, "", nil, pub, ErrHost},
		{"strict, its address", Guard{Strict: true}, "192.0.2.10:9090", nil, pub, nil},
		{"strict, loopback name", Guard{Strict: true}, "localhost:9090", nil, pub, nil},
		{"strict, another address", Guard{Strict: true}, "192.0.2.11:9090", nil, pub, ErrHost},
		{"strict, a name", Guard{Strict: true}, "evil.example:9090", nil, pub, ErrHost},
		{"strict, a pinned name", Guard{Strict: true, Hosts: []string{"admin.example.com"}}, "admin.example.com", nil, pub, nil},
		{"strict, local unknown", Guard{Strict: true}, "192.0.2.10", nil, netip.Addr{}, ErrHost},
		{"no origin", Guard{}, "127.0.0.1:8080", nil, loop, nil},
		{"same origin", Guard{}, "127.0.0.1:8080", []string{"http://127.0.0.1:8080"}, loop, nil},
		{"same host, other port", Guard{}, "127.0.0.1:8080", []string{"http://127.0.0.1:8081"}, loop, ErrOrigin},
		{"same host, no port in Host, default port", Guard{}, "mcp.example.com", []string{"https://mcp.example.com"}, pub, nil},
		{"same host, no port in Host, other port", Guard{}, "mcp.example.com", []string{"https://mcp.example.com:8443"}, pub, ErrOrigin},
		{"explicit default port", Guard{}, "mcp.example.com:443", []string{"https://mcp.example.com"}, pub, nil},
		{"evil origin", Guard{}, "127.0.0.1:8080", []string{"http://evil.example"}, loop, ErrOrigin},
		{"null origin", Guard{}, "127.0.0.1:8080", []string{"null"}, loop, ErrOrigin},
		{"two origins", Guard{}, "127.0.0.1:8080", []string{"http://127.0.0.1:8080", "http://127.0.0.1:8080"}, loop, ErrOrigin},
		{"allowed origin", Guard{Origins: []Origin{app}}, "mcp.example.com", []string{"https://app.example.com"}, pub, nil},
		{"allowed origin, other scheme", Guard{Origins: []Origin{app}}, "mcp.example.com", []string{"http://app.example.com"}, pub, ErrOrigin},
		{"any origin", Guard{AnyOrigin: true}, "mcp.example.com", []string{"null"}, pub, nil},
		{"rebinding: Host and Origin the attacker's", Guard{Strict: true}, "evil.example:9090", []string{"http://evil.example:9090"}, pub, ErrHost},
		{"host refused before origin", Guard{AnyOrigin: true}, "evil.example", nil, loop, ErrHost},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.g.Check(tt.host, tt.origins, tt.local); got != tt.want {
				t.Errorf("Check(%q, %q, %v) = %v, want %v", tt.host, tt.origins, tt.local, got, tt.want)
			}
		})
	}
}

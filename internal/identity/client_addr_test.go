package identity

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// testProxies trusts a private range, one address and a documentation
// IPv6 range, as a gateway behind a load balancer would.
func testProxies(t testing.TB, header string) *Proxies {
	t.Helper()
	p, err := NewProxies([]string{"10.0.0.0/8", "192.168.1.1", "2001:db8::/32"}, header)
	if err != nil {
		t.Fatalf("NewProxies: %v", err)
	}
	return p
}

func TestClientAddr(t *testing.T) {
	xff := testProxies(t, "X-Forwarded-For")
	realIP := testProxies(t, "X-Real-IP")
	nobody, err := NewProxies(nil, "")
	if err != nil {
		t.Fatalf("NewProxies(nil, \"\"): %v", err)
	}
	tests := []struct {
		name   string
		p      *Proxies
		remote string
		values []string
		want   string // "" means ok is false
	}{
		{"untrusted peer ignores header", xff, "203.0.113.9:5000", []string{"198.51.100.7"}, "203.0.113.9"},
		{"no header", xff, "10.0.0.1:5000", nil, "10.0.0.1"},
		{"client then trusted proxy", xff, "10.0.0.1:5000", []string{"198.51.100.7, 10.0.0.2"}, "198.51.100.7"},
		{"client appended by the peer", xff, "10.0.0.1:5000", []string{"198.51.100.7"}, "198.51.100.7"},
		{"spoofed leftmost ignored", xff, "10.0.0.1:5000", []string{"6.6.6.6, 10.9.9.9, 198.51.100.7, 10.0.0.2"}, "198.51.100.7"},
		{"all trusted gives leftmost", xff, "10.0.0.1:5000", []string{"10.0.0.3, 192.168.1.1,10.0.0.2"}, "10.0.0.3"},
		{"several header lines", xff, "10.0.0.1:5000", []string{"6.6.6.6", "198.51.100.7, 10.0.0.2", "10.0.0.3"}, "198.51.100.7"},
		{"all trusted across lines", xff, "10.0.0.1:5000", []string{"10.0.0.4", "10.0.0.3"}, "10.0.0.4"},
		{"empty elements skipped", xff, "10.0.0.1:5000", []string{"", "198.51.100.7,, 10.0.0.2 ,", " "}, "198.51.100.7"},
		{"garbage rightmost keeps peer", xff, "10.0.0.1:5000", []string{"198.51.100.7, garbage"}, "10.0.0.1"},
		{"garbage stops at trusted hop", xff, "10.0.0.1:5000", []string{"198.51.100.7, unknown, 10.0.0.2"}, "10.0.0.2"},
		{"garbage left of the client", xff, "10.0.0.1:5000", []string{"garbage, 198.51.100.7, 10.0.0.2"}, "198.51.100.7"},
		{"quoted is garbage", xff, "10.0.0.1:5000", []string{`"198.51.100.7"`}, "10.0.0.1"},
		{"hop with port", xff, "10.0.0.1:5000", []string{"198.51.100.7:4711, 10.0.0.2:80"}, "198.51.100.7"},
		{"ipv6 peer and client", xff, "[2001:db8::1]:443", []string{"2600::1, 2001:db8:ffff::5"}, "2600::1"},
		{"ipv6 hop with port", xff, "[2001:db8::1]:443", []string{"[2600::1]:443"}, "2600::1"},
		{"ipv6 hop bracketed", xff, "[2001:db8::1]:443", []string{"[2600::1]"}, "2600::1"},
		{"ipv6 zone dropped", xff, "[2001:db8::1%eth0]:443", []string{"fe80::1%eth0"}, "fe80::1"},
		{"mapped peer is trusted", xff, "[::ffff:10.0.0.1]:443", []string{"198.51.100.7"}, "198.51.100.7"},
		{"mapped hop unmapped", xff, "10.0.0.1:443", []string{"::ffff:198.51.100.7"}, "198.51.100.7"},
		{"mapped trusted hop skipped", xff, "10.0.0.1:443", []string{"198.51.100.7, ::ffff:10.0.0.2"}, "198.51.100.7"},
		{"mapped untrusted peer", xff, "[::ffff:203.0.113.9]:443", []string{"198.51.100.7"}, "203.0.113.9"},
		{"bare ip peer", xff, "10.0.0.1", []string{"198.51.100.7"}, "198.51.100.7"},
		{"x-real-ip", realIP, "10.0.0.1:5000", []string{"198.51.100.7"}, "198.51.100.7"},
		{"x-real-ip trusted value", realIP, "10.0.0.1:5000", []string{"10.0.0.2"}, "10.0.0.2"},
		{"nil trusts nobody", nil, "10.0.0.1:5000", []string{"198.51.100.7"}, "10.0.0.1"},
		{"empty config trusts nobody", nobody, "10.0.0.1:5000", []string{"198.51.100.7"}, "10.0.0.1"},
		{"unparseable peer", xff, "not-an-address", []string{"198.51.100.7"}, ""},
		{"empty peer", xff, "", nil, ""},
		{"unix socket peer", xff, "@", nil, ""},
		{"bad port", xff, "10.0.0.1:http", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.p.ClientAddr(tt.remote, tt.values)
			if tt.want == "" {
				if ok || got.IsValid() {
					t.Errorf("ClientAddr(%q) = %v, %v; want the zero address, false", tt.remote, got, ok)
				}
				return
			}
			if !ok {
				t.Fatalf("ClientAddr(%q) failed", tt.remote)
			}
			if diff := cmp.Diff(tt.want, got.String()); diff != "" {
				t.Errorf("ClientAddr(%q, %q) (-want +got):\n%s", tt.remote, tt.values, diff)
			}
		})
	}
}

// TestAppendChain: the chain a replica is told of is the client ClientAddr
// finds and the trusted hops after it; what the client wrote left of
// itself, and every hop an untrusted peer claims, are left out.
func TestAppendChain(t *testing.T) {
	xff := testProxies(t, "X-Forwarded-For")
	tests := []struct {
		name   string
		p      *Proxies
		remote string
		values []string
		want   string // the chain, ", "-joined; "" means ok is false
	}{
		{"untrusted peer alone", xff, "203.0.113.9:5000", []string{"6.6.6.6"}, "203.0.113.9"},
		{"nil trusts nobody", nil, "10.0.0.1:5000", []string{"6.6.6.6"}, "10.0.0.1"},
		{"trusted peer without header", xff, "10.0.0.1:5000", nil, "10.0.0.1"},
		{"client through two proxies", xff, "10.0.0.1:5000", []string{"198.51.100.7, 10.0.0.2"}, "198.51.100.7, 10.0.0.2, 10.0.0.1"},
		{"spoof left of the client dropped", xff, "10.0.0.1:5000", []string{"6.6.6.6, 198.51.100.7"}, "198.51.100.7, 10.0.0.1"},
		{"several lines", xff, "10.0.0.1:5000", []string{"6.6.6.6", "198.51.100.7", "10.0.0.3"}, "198.51.100.7, 10.0.0.3, 10.0.0.1"},
		{"all trusted", xff, "10.0.0.1:5000", []string{"10.0.0.3, 10.0.0.2"}, "10.0.0.3, 10.0.0.2, 10.0.0.1"},
		{"garbage stops the walk", xff, "10.0.0.1:5000", []string{"198.51.100.7, unknown, 10.0.0.2"}, "10.0.0.2, 10.0.0.1"},
		{"ipv6 and ports", xff, "[2001:db8::1]:443", []string{"[2600::1]:80, 2001:db8::2"}, "2600::1, 2001:db8::2, 2001:db8::1"},
		{"unparseable peer", xff, "nope", []string{"198.51.100.7"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chain, ok := tt.p.AppendChain(nil, tt.remote, tt.values)
			if tt.want == "" {
				if ok || len(chain) != 0 {
					t.Errorf("AppendChain(%q) = %v, %v; want nothing, false", tt.remote, chain, ok)
				}
				return
			}
			got := make([]string, len(chain))
			for i, a := range chain {
				got[i] = a.String()
			}
			if diff := cmp.Diff(tt.want, strings.Join(got, ", ")); !ok || diff != "" {
				t.Errorf("AppendChain(%q, %q) ok %v (-want +got):\n%s", tt.remote, tt.values, ok, diff)
			}
		})
	}
}

func TestNewProxies(t *testing.T) {
	tests := []struct {
		name       string
		trusted    []string
		header     string
		wantHeader string
		trust      []string // addresses the result must trust
		distrust   []string // and must not
	}{
		{"empty trusts nobody", nil, "", "", nil, []string{"10.0.0.1", "::1"}},
		{"header canonicalised", []string{"10.0.0.0/8"}, " x-forwarded-for ", "X-Forwarded-For",
			[]string{"10.1.2.3"}, []string{"11.0.0.1"}},
		{"single addresses", []string{"192.0.2.1", "::1", "fe80::1%eth0"}, "X-Real-IP", "X-Real-Ip",
			[]string{"192.0.2.1", "::1", "fe80::1"}, []string{"192.0.2.2", "::2"}},
		{"unmasked prefix", []string{" 10.1.2.3/16 "}, "X-Forwarded-For", "X-Forwarded-For",
			[]string{"10.1.0.1", "10.1.255.255"}, []string{"10.2.0.1"}},
		{"mapped prefix unmapped", []string{"::ffff:10.0.0.0/104"}, "X-Forwarded-For", "X-Forwarded-For",
			[]string{"10.9.9.9"}, []string{"11.0.0.1"}},
		{"mapped address unmapped", []string{"::ffff:192.0.2.1"}, "X-Forwarded-For", "X-Forwarded-For",
			[]string{"192.0.2.1"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewProxies(tt.trusted, tt.header)
			if err != nil {
				t.Fatalf("NewProxies: %v", err)
			}
			if got := p.Header(); got != tt.wantHeader {
				t.Errorf("Header() = %q, want %q", got, tt.wantHeader)
			}
			for _, s := range tt.trust {
				if !p.trusts(netip.MustParseAddr(s).WithZone("")) {
					t.Errorf("%s is not trusted", s)
				}
			}
			for _, s := range tt.distrust {
				if p.trusts(netip.MustParseAddr(s)) {
					t.Errorf("%s is trusted", s)
				}
			}
		})
	}
}

func TestNewProxiesRefuses(t *testing.T) {
	tests := []struct {
		name     string
		trusted  []string
		header   string
		sentinel error  // nil: no sentinel expected
		mention  string // text the message must contain
	}{
		{"header without proxies", nil, "X-Forwarded-For", ErrNoTrustedProxies, "without trusted proxies"},
		{"proxies without header", []string{"10.0.0.0/8"}, " ", ErrNoProxyHeader, "without a trusted proxy header"},
		{"bad prefix length", []string{"10.0.0.0/8", "10.0.0.0/33"}, "X-Forwarded-For", nil, `"10.0.0.0/33"`},
		{"hostname", []string{"proxy.internal"}, "X-Forwarded-For", nil, `"proxy.internal"`},
		{"empty entry", []string{"10.0.0.0/8", " "}, "X-Forwarded-For", nil, "empty entry"},
		{"prefix with zone", []string{"fe80::/64%eth0"}, "X-Forwarded-For", nil, `"fe80::/64%eth0"`},
		{"bad header name", []string{"10.0.0.0/8"}, "X Forwarded For", nil, "not a valid field name"},
		{"forwarded", []string{"10.0.0.0/8"}, "forwarded", nil, "Forwarded is not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewProxies(tt.trusted, tt.header)
			if err == nil {
				t.Fatalf("NewProxies(%q, %q) = %v, want an error", tt.trusted, tt.header, p)
			}
			if tt.sentinel != nil && !errors.Is(err, tt.sentinel) {
				t.Errorf("error %q is not %q", err, tt.sentinel)
			}
			if !strings.Contains(err.Error(), tt.mention) {
				t.Errorf("error %q does not mention %q", err, tt.mention)
			}
			if msg := err.Error(); msg != strings.ToLower(msg[:1])+msg[1:] {
				t.Errorf("error %q does not start in lower case", msg)
			}
		})
	}
}

package gateway

import (
	"net/http"
	"net/netip"
	"strings"

	"github.com/mcpfleet/mcpfleet/internal/identity"
)

// What a replica is told of where a request came from is the gateway's
// word, never the client's: a replica that believed a client's
// X-Forwarded-For, X-Real-IP or X-Original-URL would log, limit or
// authorise the wrong caller or path. The client's such fields stay behind
// (claimsOrigin), and the gateway writes its own X-Forwarded-For (and
// Forwarded, RFC 7239) from the chain the trusted proxies vouch for
// (identity.Proxies.AppendChain): the peer alone when nobody is trusted.

// claimsOrigin reports a field k (canonical) that only a proxy in front of
// the replica should set: the client's address, the scheme, host, port or
// path it used, the method it meant; and HTTP2-Settings, which belongs to
// the client's own connection (RFC 9113 section 3.1 leaves it to h2c,
// which the gateway does not relay). None of them goes to a replica.
func claimsOrigin(k string) bool {
	switch k {
	case "Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto",
		"X-Real-Ip", "True-Client-Ip", "X-Client-Ip", "X-Cluster-Client-Ip",
		"Cf-Connecting-Ip", "Fastly-Client-Ip",
		"X-Forwarded-Prefix", "X-Forwarded-Port", "X-Forwarded-Server",
		"X-Forwarded-Ssl", "X-Forwarded-Scheme", "X-Url-Scheme", "Front-End-Https",
		"X-Original-Url", "X-Rewrite-Url", "X-Original-Uri", "X-Forwarded-Uri", "X-Original-Host",
		"X-Http-Method-Override", "X-Http-Method", "X-Method-Override",
		"Http2-Settings":
		return true
	}
	return false
}

// clientChain appends to dst the hops a replica is told of, the client
// first and the gateway's peer last, as p resolves them from in (p may be
// nil, which trusts nobody); nothing when in.RemoteAddr does not parse.
func clientChain(dst []netip.Addr, in *http.Request, p *identity.Proxies) []netip.Addr {
	var hops []string
	if h := p.Header(); h != "" {
		hops = in.Header[h]
	}
	dst, _ = p.AppendChain(dst, in.RemoteAddr, hops)
	return dst
}

// appendXFF appends the X-Forwarded-For value of chain: its addresses,
// comma-separated, IPv6 without brackets as the field's readers expect.
func appendXFF(b []byte, chain []netip.Addr) []byte {
	for i, a := range chain {
		if i > 0 {
			b = append(b, ',', ' ')
		}
		b = a.AppendTo(b)
	}
	return b
}

// appendForwarded appends the Forwarded value (RFC 7239 section 4) of
// chain: one element a hop, "for=" its address (an IPv6 one quoted and in
// brackets, as section 6 requires), the last, the gateway's own, with the
// host the client asked for and the protocol it used (sections 5.3, 5.4).
// A host that would not fit a quoted-string is left out.
func appendForwarded(b []byte, chain []netip.Addr, host, proto string) []byte {
	for i, a := range chain {
		if i > 0 {
			b = append(b, ',', ' ')
		}
		b = append(b, "for="...)
		if a.Is6() {
			b = append(b, '"', '[')
			b = a.AppendTo(b)
			b = append(b, ']', '"')
		} else {
			b = a.AppendTo(b)
		}
	}
	if len(chain) == 0 {
		return b
	}
	if host != "" && plainQuoted(host) {
		b = append(b, ";host=\""...)
		b = append(b, host...)
		b = append(b, '"')
	}
	b = append(b, ";proto="...)
	return append(b, proto...)
}

// plainQuoted reports whether s goes between quotes as it is: visible
// ASCII, neither a quote nor a backslash (RFC 9110 section 5.6.4's qdtext
// without what would need escaping).
func plainQuoted(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

func splitComma(s string) []string {
	parts := strings.Split(s, ",")
	out := parts[:0]
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

package identity

import (
	"errors"
	"fmt"
	"net/netip"
	"net/textproto"
	"slices"
	"strings"
)

// Errors NewProxies returns, wrapped, when one half of the configuration is
// missing: the header is believed only from listed peers, so neither makes
// sense alone.
var (
	// ErrNoTrustedProxies means a header was named but no proxies listed.
	ErrNoTrustedProxies = errors.New("trusted proxy header given without trusted proxies")
	// ErrNoProxyHeader means proxies were listed but no header named.
	ErrNoProxyHeader = errors.New("trusted proxies given without a trusted proxy header")
)

// Proxies says which peers are trusted to name the client in a header. The
// zero Proxies, like a nil *Proxies, trusts nobody. A Proxies is immutable
// and safe for concurrent use.
type Proxies struct {
	trusted []netip.Prefix // unmapped and masked
	header  string         // canonical form, as http.Header keys are
}

// NewProxies parses the trusted peers, each a CIDR prefix or a single IP
// address, and the name of the header they set (for example
// "X-Forwarded-For" or "X-Real-IP"). Each is refused without the other
// (ErrNoTrustedProxies, ErrNoProxyHeader); an empty list with an empty
// header gives a Proxies that trusts nobody. An entry that does not parse
// gives an error naming it. "Forwarded" (RFC 7239) is refused: its
// "for=" syntax is not read, and misreading it would silently trust nobody.
func NewProxies(trusted []string, header string) (*Proxies, error) {
	header = strings.TrimSpace(header)
	switch {
	case len(trusted) == 0 && header == "":
		return &Proxies{}, nil
	case len(trusted) == 0:
		return nil, fmt.Errorf("configuring trusted proxies: %w", ErrNoTrustedProxies)
	case header == "":
		return nil, fmt.Errorf("configuring trusted proxies: %w", ErrNoProxyHeader)
	}
	if !isFieldName(header) {
		return nil, fmt.Errorf("configuring trusted proxies: header %q is not a valid field name", header)
	}
	if strings.EqualFold(header, "Forwarded") {
		return nil, errors.New("configuring trusted proxies: header Forwarded is not supported (use X-Forwarded-For or X-Real-IP)")
	}
	p := &Proxies{
		trusted: make([]netip.Prefix, 0, len(trusted)),
		header:  textproto.CanonicalMIMEHeaderKey(header),
	}
	for _, entry := range trusted {
		pfx, err := parseTrusted(entry)
		if err != nil {
			return nil, fmt.Errorf("parsing trusted proxy %q: %w", entry, err)
		}
		p.trusted = append(p.trusted, pfx)
	}
	return p, nil
}

// parseTrusted reads a CIDR prefix or a single address. IPv4-mapped IPv6
// becomes IPv4, as the addresses it is matched against do.
func parseTrusted(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return netip.Prefix{}, errors.New("empty entry")
	}
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return netip.Prefix{}, err
		}
		a = canonicalAddr(a)
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	pfx, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	if a := pfx.Addr(); a.Is4In6() && pfx.Bits() >= 96 {
		pfx = netip.PrefixFrom(a.Unmap(), pfx.Bits()-96)
	}
	return pfx.Masked(), nil
}

// isFieldName reports whether s is an HTTP field name: a token of tchar
// (RFC 9110 section 5.6.2).
func isFieldName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return s != ""
}

// Header returns the canonical name of the header trusted proxies set
// ("X-Forwarded-For"), or "" when nobody is trusted. p may be nil.
func (p *Proxies) Header() string {
	if p == nil {
		return ""
	}
	return p.header
}

// ClientAddr returns the client's address. remoteAddr is the connection's
// peer, "ip:port" as in http.Request.RemoteAddr (a bare IP is accepted too);
// headerValues are all occurrences of the Header, in order. p may be nil,
// which trusts nobody.
//
// The header is believed only when the peer is trusted. Its values form one
// comma-separated list (RFC 9110 section 5.3), read from the right: each hop
// a trusted proxy vouches for is skipped, and the first hop that is not
// itself trusted is the client; if every hop is trusted, the leftmost is.
// Empty list elements are ignored; an element that is not an address (with
// or without a port) stops the walk at the last good address, the peer or
// the hop to its right. A single-value header such as X-Real-IP is a list
// of one. IPv4-mapped IPv6 is unmapped and zones are dropped.
//
// If remoteAddr cannot be parsed, ClientAddr returns the zero netip.Addr
// and false.
func (p *Proxies) ClientAddr(remoteAddr string, headerValues []string) (netip.Addr, bool) {
	peer, ok := parseHop(remoteAddr)
	if !ok {
		return netip.Addr{}, false
	}
	client, _ := p.walk(peer, headerValues, nil, false)
	return client, true
}

// AppendChain appends to dst the hops ClientAddr walks, in the order the
// request passed them: the client, each trusted proxy between it and the
// peer, then the peer (X-Forwarded-For's order). Hops left of the client,
// which no trusted proxy vouches for, are not in it, so an untrusted peer's
// chain is the peer alone. If remoteAddr cannot be parsed, AppendChain
// returns dst unchanged and false.
func (p *Proxies) AppendChain(dst []netip.Addr, remoteAddr string, headerValues []string) ([]netip.Addr, bool) {
	peer, ok := parseHop(remoteAddr)
	if !ok {
		return dst, false
	}
	start := len(dst)
	_, dst = p.walk(peer, headerValues, dst, true)
	slices.Reverse(dst[start:])
	return dst, true
}

// walk finds the client from the peer as ClientAddr says; with record, it
// appends each hop it takes to dst, the peer first and the client last.
func (p *Proxies) walk(peer netip.Addr, headerValues []string, dst []netip.Addr, record bool) (netip.Addr, []netip.Addr) {
	if record {
		dst = append(dst, peer)
	}
	if !p.trusts(peer) {
		return peer, dst
	}
	last := peer
	for i := len(headerValues) - 1; i >= 0; i-- {
		for rest := headerValues[i]; rest != ""; {
			var elem string
			if j := strings.LastIndexByte(rest, ','); j >= 0 {
				elem, rest = rest[j+1:], rest[:j]
			} else {
				elem, rest = rest, ""
			}
			if elem = strings.Trim(elem, " \t"); elem == "" {
				continue
			}
			hop, ok := parseHop(elem)
			if !ok {
				return last, dst
			}
			if record {
				dst = append(dst, hop)
			}
			if !p.trusts(hop) {
				return hop, dst
			}
			last = hop
		}
	}
	return last, dst
}

// trusts reports whether a is a trusted proxy.
func (p *Proxies) trusts(a netip.Addr) bool {
	if p == nil {
		return false
	}
	for _, pfx := range p.trusted {
		if pfx.Contains(a) {
			return true
		}
	}
	return false
}

// parseHop reads an address with or without a port: "192.0.2.1",
// "192.0.2.1:443", "2001:db8::1", "[2001:db8::1]" or "[2001:db8::1]:443".
// The syntax picks the one parser that can succeed, so the common cases do
// not pay for a failed parse's error.
func parseHop(s string) (netip.Addr, bool) {
	var a netip.Addr
	var err error
	switch {
	case len(s) >= 2 && s[0] == '[' && s[len(s)-1] == ']':
		a, err = netip.ParseAddr(s[1 : len(s)-1])
	case strings.HasPrefix(s, "[") || strings.Count(s, ":") == 1:
		var ap netip.AddrPort
		ap, err = netip.ParseAddrPort(s)
		a = ap.Addr()
	default:
		a, err = netip.ParseAddr(s)
	}
	if err != nil {
		return netip.Addr{}, false
	}
	return canonicalAddr(a), true
}

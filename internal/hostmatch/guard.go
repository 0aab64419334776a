package hostmatch

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
)

// A page in a browser can reach a listener it should not in two ways. DNS
// rebinding: a name the attacker owns first resolves to the attacker, then
// to the listener, and the browser sends the attacker's name as Host (and
// as Origin: to the browser it is one site). A cross-site request: a page
// of another site posts to the listener, with that site's Origin. The
// Streamable HTTP transport says servers MUST validate Origin (MCP
// 2025-11-25, "Transports", "Security Warning"), and the security best
// practices add the Host check for local servers. Guard is both checks,
// as one pure decision for every listener.

// The refusals of Guard.Check.
var (
	// ErrHost: the Host is not one the listener answers to.
	ErrHost = errors.New("host not allowed (DNS rebinding protection)")
	// ErrOrigin: the Origin is neither the request's own host nor an
	// allowed origin.
	ErrOrigin = errors.New("origin not allowed")
)

// Guard decides which Host and Origin a listener takes. The zero value
// takes any Host on a listener that is not on loopback, loopback names on
// one that is, and an Origin only when it names the request's own Host.
type Guard struct {
	// AnyHost takes every Host.
	AnyHost bool
	// Hosts are the names (Match patterns, lower case) a Host may give;
	// set, they are the only ones taken, except as Strict says.
	Hosts []string
	// Strict takes, besides Hosts, loopback names and the address the
	// request arrived on, and nothing else, whatever the listener's
	// address: the admin listener's rule.
	Strict bool
	// AnyOrigin takes every Origin: the Origin check is off.
	AnyOrigin bool
	// Origins may call besides the request's own host.
	Origins []Origin
}

// ParseOrigins reads a list of allowed origins as Guard takes them: each
// parsed by ParseOrigin, except "*", which takes any.
func ParseOrigins(list []string) (origins []Origin, anyOrigin bool, err error) {
	for _, s := range list {
		if s == "*" {
			anyOrigin = true
			continue
		}
		o, err := ParseOrigin(s)
		if err != nil {
			return nil, false, fmt.Errorf("allowed origin %q: %w", s, err)
		}
		origins = append(origins, o)
	}
	return origins, anyOrigin, nil
}

// Check decides a request that gave host as its Host and origins as its
// Origin header fields (none for a client that sends none, as non-browser
// clients do), and arrived on local (the zero Addr when unknown). It
// returns nil, ErrHost or ErrOrigin.
func (g *Guard) Check(host string, origins []string, local netip.Addr) error {
	if !g.hostOK(host, local) {
		return ErrHost
	}
	if len(origins) == 0 || g.AnyOrigin {
		return nil
	}
	if len(origins) > 1 {
		return ErrOrigin // one origin or none (RFC 6454, section 7.1)
	}
	o, err := ParseOrigin(origins[0])
	if err != nil {
		return ErrOrigin
	}
	if slices.Contains(g.Origins, o) || sameHost(o, host) {
		return nil
	}
	return ErrOrigin
}

func (g *Guard) hostOK(hostport string, local netip.Addr) bool {
	public := !local.IsValid() || !local.Unmap().IsLoopback()
	if g.AnyHost || !g.Strict && len(g.Hosts) == 0 && public {
		return true
	}
	host, _, ok := ParseHost(hostport)
	if !ok {
		return false
	}
	if len(g.Hosts) > 0 && Takes(g.Hosts, host) {
		return true
	}
	if g.Strict {
		if IsLoopback(host) {
			return true
		}
		ip, err := netip.ParseAddr(host)
		return err == nil && local.IsValid() && ip == local.Unmap()
	}
	return len(g.Hosts) == 0 && IsLoopback(host)
}

// sameHost says whether o names the host hostport names. A Host without a
// port is taken to name the origin's default port, whatever the scheme: a
// proxy that terminates TLS in front passes the client's Host on, and the
// listener cannot know the scheme the client used.
func sameHost(o Origin, hostport string) bool {
	host, port, ok := ParseHost(hostport)
	if !ok || host != o.Host {
		return false
	}
	if port == 0 {
		return o.Port == defaultPort(o.Scheme)
	}
	return port == o.Port
}

// IsLoopback says whether host (canonical, as ParseHost gives it) names
// loopback: localhost, 127.0.0.0/8 or ::1.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// IP is a listener address's IP, IPv4 unmapped, the zero Addr for nil or
// an address that names none.
func IP(a net.Addr) netip.Addr {
	switch a := a.(type) {
	case nil:
		return netip.Addr{}
	case *net.TCPAddr:
		if a == nil {
			return netip.Addr{}
		}
		ip, _ := netip.AddrFromSlice(a.IP)
		return ip.Unmap()
	default:
		ap, err := netip.ParseAddrPort(a.String())
		if err != nil {
			return netip.Addr{}
		}
		return ap.Addr().Unmap()
	}
}

package gateway

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// A page in a browser can reach a server on loopback through DNS rebinding:
// a hostname that first resolved to the attacker resolves to 127.0.0.1, and
// the browser sends the attacker's Host. Servers on loopback must refuse
// such requests (2025-11-25 "Security Best Practices", local server
// compromise); the Go SDK does. The gateway forwards with the replica's own
// Host, so the replica can no longer see the client's: the gateway checks it
// instead, on the same terms: a request that arrived on a loopback address
// must name a loopback host.

// hostAllowed reports whether r may proceed under DNS-rebinding protection.
func (g *Gateway) hostAllowed(r *http.Request) bool {
	if g.opts.AllowAnyHost {
		return true
	}
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil {
		return true
	}
	if tcp, ok := local.(*net.TCPAddr); ok {
		if !tcp.IP.IsLoopback() {
			return true
		}
	} else if !isLoopback(local.String()) {
		return true
	}
	return isLoopback(r.Host)
}

// isLoopback reports whether a host or host:port names loopback: localhost,
// 127.0.0.0/8 or ::1.
func isLoopback(hostport string) bool {
	host := hostport
	// A port only after the last colon that is not inside brackets: a
	// Host without one is split by nothing (and allocates no error).
	if i := strings.LastIndexByte(hostport, ':'); i > strings.LastIndexByte(hostport, ']') {
		if h, _, err := net.SplitHostPort(hostport); err == nil {
			host = h
		}
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

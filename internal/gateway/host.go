package gateway

import (
	"net"
	"net/http"
	"net/netip"

	"github.com/mcpfleet/mcpfleet/internal/hostmatch"
	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
)

// A page in a browser can reach the gateway in two ways it should not: DNS
// rebinding (a name of the attacker's resolves to the gateway, and the
// browser sends that name as Host) and a cross-site request (another
// site's page posts to it, with its own Origin). The Streamable HTTP
// transport says servers MUST validate Origin (MCP 2025-11-25,
// "Transports", "Security Warning"), and the security best practices
// (local server compromise) say to check Host on loopback; the Go SDK
// does both. The gateway forwards with the replica's own Host, so a
// replica can no longer see the client's: the gateway checks both instead,
// on every route that reaches a replica (the MCP path, the 2024-11-05
// paths, passthrough paths), before anything is read or forwarded.
// hostmatch.Guard is the decision.

// newGuard is the decision Options describe; an allowed origin that does
// not parse is an error.
func newGuard(o *Options) (hostmatch.Guard, error) {
	origins, anyOrigin, err := hostmatch.ParseOrigins(o.AllowedOrigins)
	g := hostmatch.Guard{AnyHost: o.AllowAnyHost, Hosts: o.AllowedHosts, Origins: origins, AnyOrigin: anyOrigin}
	return g, err
}

// edgeRefusal is the answer to a request whose Host or Origin the guard
// refuses (403), nil when it may proceed.
func (g *Gateway) edgeRefusal(r *http.Request) *mcpmsg.Error {
	switch g.guard.Check(r.Host, r.Header.Values("Origin"), localAddr(r)) {
	case nil:
		return nil
	case hostmatch.ErrHost:
		return errHost
	default:
		return errOrigin
	}
}

// localAddr is the address r arrived on, the zero Addr when the server did
// not say (http.LocalAddrContextKey).
func localAddr(r *http.Request) netip.Addr {
	a, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return hostmatch.IP(a)
}

// Package identity says who is calling, for routing only: the credential a
// request carries, else the client's address, turned into a salted routing
// key by a Keyer.
//
// Nothing here verifies anything. A bearer JWT is decoded without checking
// its signature, so a caller can claim any issuer and subject it likes; that
// decides only which replica serves it, and the replica still authenticates
// the request. An Identity never prints its contents and a Keyer's keys are
// salted HMACs, so neither a log line nor a metric label can leak a
// credential or serve as its fingerprint.
package identity

import (
	"fmt"
	"io"
	"log/slog"
	"net/netip"
)

// Kind says where an Identity came from.
type Kind uint8

// The kinds of identity. The zero Kind belongs to the zero Identity only.
const (
	// KindJWT is a bearer JWT's issuer and subject, read without verification,
	// so that a refreshed access token keeps its affinity.
	KindJWT Kind = iota + 1
	// KindToken is an Authorization scheme and credential, or a PRIVATE-TOKEN
	// (which counts as a bearer token).
	KindToken
	// KindAddress is the client's IP address: the fallback when a request
	// carries no credential.
	KindAddress
)

// String returns "jwt", "token" or "address", and "none" for the zero Kind.
func (k Kind) String() string {
	switch k {
	case KindJWT:
		return "jwt"
	case KindToken:
		return "token"
	case KindAddress:
		return "address"
	}
	return "none"
}

// redacted is all an Identity ever prints.
const redacted = "[redacted]"

// Identity is a caller's stable identity for routing, derived from its
// credential or its address. It never leaves the process: it is only fed to
// a Keyer. Its fields are unexported and every way of printing it (fmt verbs,
// slog) yields "[redacted]", so it cannot be logged by accident.
//
// Identities are comparable with == and usable as map keys: two requests
// have equal identities exactly when they route alike. The zero Identity
// (Kind "none") is never returned by Resolve.
type Identity struct {
	kind Kind
	// scheme is the lower-cased Authorization scheme of a KindToken
	// ("bearer" for a PRIVATE-TOKEN); empty otherwise.
	scheme string
	// value is the normalised credential of a KindToken, or the
	// length-prefixed issuer and subject of a KindJWT; empty otherwise.
	value string
	// addr is the unmapped, zoneless address of a KindAddress.
	addr netip.Addr
}

// Kind says where the identity came from.
func (id Identity) Kind() Kind { return id.kind }

// IsZero reports whether id is the zero Identity, which FromCredential
// returns alongside false.
func (id Identity) IsZero() bool { return id == Identity{} }

// String returns "[redacted]".
func (Identity) String() string { return redacted }

// GoString returns "[redacted]", so %#v cannot reveal the fields either.
func (Identity) GoString() string { return redacted }

// Format writes "[redacted]" whatever the verb and flags.
func (Identity) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, redacted) }

// LogValue makes slog print "[redacted]" whichever handler is in use.
func (Identity) LogValue() slog.Value { return slog.StringValue(redacted) }

// appendKeyInput appends the bytes a Keyer authenticates: the kind, then
//
//	KindToken:   scheme " " credential
//	KindJWT:     decimal len(iss) ":" iss sub
//	KindAddress: the address text (netip.Addr.AppendTo)
//
// The leading kind byte keeps kinds apart (a token spelled like an address
// is not that address), and a scheme never contains a space, so each
// encoding is unambiguous.
func (id Identity) appendKeyInput(b []byte) []byte {
	b = append(b, byte(id.kind))
	switch id.kind {
	case KindToken:
		b = append(b, id.scheme...)
		b = append(b, ' ')
		b = append(b, id.value...)
	case KindJWT:
		b = append(b, id.value...)
	case KindAddress:
		b = id.addr.AppendTo(b)
	}
	return b
}

// FromAddress returns the identity of a client address. IPv4-mapped IPv6
// addresses count as their IPv4 address and zones are dropped. It never
// returns an empty identity: the invalid (zero) netip.Addr gives the
// identity of the IPv4 unspecified address, 0.0.0.0.
func FromAddress(addr netip.Addr) Identity {
	addr = canonicalAddr(addr)
	if !addr.IsValid() {
		addr = netip.IPv4Unspecified()
	}
	return Identity{kind: KindAddress, addr: addr}
}

// canonicalAddr unmaps IPv4-mapped IPv6 and drops any zone.
func canonicalAddr(a netip.Addr) netip.Addr { return a.Unmap().WithZone("") }

// Resolve returns the routing identity for a request: the credential if any
// (FromCredential), else the client address that p finds in remoteAddr and
// headerValues (ClientAddr; p may be nil, which trusts nobody). It never
// returns an empty identity: if even remoteAddr is unparseable it returns
// the identity of the unspecified address, as FromAddress does.
func Resolve(authorization, privateToken, remoteAddr string, headerValues []string, p *Proxies) Identity {
	if id, ok := FromCredential(authorization, privateToken); ok {
		return id
	}
	addr, _ := p.ClientAddr(remoteAddr, headerValues)
	return FromAddress(addr)
}

// ResolveCredential is Resolve for deciding whose limits (and cached
// answers) a request uses: the credential itself (FromCredentialItself),
// never unverified JWT claims, else the client address as Resolve finds it.
func ResolveCredential(authorization, privateToken, remoteAddr string, headerValues []string, p *Proxies) Identity {
	if id, ok := FromCredentialItself(authorization, privateToken); ok {
		return id
	}
	addr, _ := p.ClientAddr(remoteAddr, headerValues)
	return FromAddress(addr)
}

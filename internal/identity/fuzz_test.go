package identity

import (
	"encoding/base64"
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

// FuzzFromCredential checks that FromCredential never panics, that its
// result is well formed and never printable, and that respelling the
// Authorization value (ASCII case of the scheme, whitespace around and
// between its parts) or moving a token between PRIVATE-TOKEN and "Bearer"
// does not change the identity.
func FuzzFromCredential(f *testing.F) {
	jwt := makeJWT(f, map[string]string{"iss": "https://auth.example", "sub": "user-42"}, "sig")
	for _, s := range []struct{ auth, priv string }{
		{"Bearer abc", ""}, {"bearer  abc ", "def"}, {"BASIC dXNlcjpwYXNz", ""}, {"", "glpat-123"},
		{"Bearer " + jwt, ""}, {"", jwt}, {"Bearer a.b.c", ""}, {"Bearer", "x"}, {"Digest a=1,\tb=2", ""},
		{"\tToKeN\r\nx\v", ""}, {"Bearer ey.ey.", ""},
	} {
		f.Add(s.auth, s.priv, uint64(0x5), uint8(7))
	}
	f.Fuzz(func(t *testing.T, auth, priv string, caseMask uint64, pad uint8) {
		id, ok := FromCredential(auth, priv)
		checkCredentialIdentity(t, id, ok)
		if got := fmt.Sprint(id); got != redacted {
			t.Fatalf("identity printed as %q", got)
		}

		alt := respell(auth, caseMask, pad)
		if len(auth) <= MaxCredentialLen && len(alt) <= MaxCredentialLen {
			if altID, altOK := FromCredential(alt, priv); altID != id || altOK != ok {
				t.Errorf("FromCredential(%q) = %s, %v but respelled as %q = %s, %v",
					auth, describe(id), ok, alt, describe(altID), altOK)
			}
		}

		if len(priv)+len("Bearer ") <= MaxCredentialLen {
			bearer, bOK := FromCredential("Bearer "+priv, "")
			private, pOK := FromCredential("", priv)
			if bearer != private || bOK != pOK {
				t.Errorf("token %q: as Bearer %s, %v; as PRIVATE-TOKEN %s, %v",
					priv, describe(bearer), bOK, describe(private), pOK)
			}
		}
	})
}

// checkCredentialIdentity checks the shape of FromCredential's result.
func checkCredentialIdentity(t *testing.T, id Identity, ok bool) {
	t.Helper()
	switch {
	case !ok:
		if !id.IsZero() {
			t.Fatalf("no credential, but identity %s", describe(id))
		}
	case id.kind == KindJWT:
		if id.scheme != "" || id.addr.IsValid() || id.value == "" {
			t.Fatalf("malformed JWT identity %s", describe(id))
		}
	case id.kind == KindToken:
		if id.scheme == "" || strings.IndexFunc(id.scheme, isSpaceRune) >= 0 ||
			strings.IndexFunc(id.scheme, isUpperASCII) >= 0 {
			t.Fatalf("malformed scheme in %s", describe(id))
		}
		if v := id.value; v == "" || v != trimSpace(v) || v != collapseSpace(v) {
			t.Fatalf("credential not normalised in %s", describe(id))
		}
	default:
		t.Fatalf("FromCredential gave kind %v", id.kind)
	}
}

func isSpaceRune(r rune) bool   { return r < 0x80 && isSpace(byte(r)) }
func isUpperASCII(r rune) bool  { return 'A' <= r && r <= 'Z' }
func flipASCIICase(c byte) byte { return c ^ ('a' - 'A') }

// respell rewrites an Authorization value the way clients differ: the ASCII
// letters of its scheme flipped in case where caseMask says, each whitespace
// run replaced by another, and whitespace added around it.
func respell(auth string, caseMask uint64, pad uint8) string {
	pads := [...]string{" ", "\t", "  ", " \t\r\n "}
	s := trimSpace(auth)
	var b strings.Builder
	b.WriteString(pads[pad%4])
	inScheme := true
	run := int(pad >> 2)
	for i := 0; i < len(s); {
		if isSpace(s[i]) {
			for i < len(s) && isSpace(s[i]) {
				i++
			}
			b.WriteString(pads[run%4])
			run++
			inScheme = false
			continue
		}
		c := s[i]
		if inScheme && i < 64 && caseMask>>i&1 == 1 && ('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			c = flipASCIICase(c)
		}
		b.WriteByte(c)
		i++
	}
	b.WriteString(pads[(pad>>4)%4])
	return b.String()
}

// FuzzIssuerSubject checks the claim scanner against encoding/json, and
// that a token built around the payload is a JWT exactly when a full
// decode finds non-empty string "iss" and "sub".
func FuzzIssuerSubject(f *testing.F) {
	for _, s := range jwtPayloadSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		checkClaims(t, payload)
		tok := "eyJhbGciOiJub25lIn0." + base64.RawURLEncoding.EncodeToString(payload) + ".c2ln"
		id, ok := FromCredential("Bearer "+tok, "")
		if len(tok)+len("Bearer ") > MaxCredentialLen {
			return
		}
		_, _, isJWT := claimsByDecode(payload)
		if !ok || (id.kind == KindJWT) != isJWT {
			t.Errorf("payload %q: identity %s, want a JWT: %v", payload, describe(id), isJWT)
		}
	})
}

// FuzzClientAddr checks that ClientAddr never panics, that it answers
// exactly when the peer parses, and that its answer is the peer or an
// address from the header, the one a plain reading of the rules picks.
func FuzzClientAddr(f *testing.F) {
	p := testProxies(f, "X-Forwarded-For")
	for _, s := range [][3]string{
		{"10.0.0.1:5000", "198.51.100.7, 10.0.0.2", ""},
		{"10.0.0.1:5000", "6.6.6.6", "198.51.100.7, 10.0.0.2"},
		{"203.0.113.9:1", "198.51.100.7", ""},
		{"[2001:db8::1%eth0]:443", "[2600::1]:80,fe80::1%lo", "::ffff:10.0.0.2"},
		{"[::ffff:10.0.0.1]:443", "garbage, 10.0.0.3", ",,"},
		{"10.0.0.1", "[192.0.2.1]", "10.0.0.2:1"},
		{"bad", "", ""},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, remote, h1, h2 string) {
		values := []string{h1, h2}
		got, ok := p.ClientAddr(remote, values)
		peer, peerOK := referenceParse(remote)
		if ok != peerOK {
			t.Fatalf("ClientAddr(%q) ok = %v, but the peer parses: %v", remote, ok, peerOK)
		}
		if !ok {
			if got.IsValid() {
				t.Fatalf("ClientAddr(%q) failed but returned %v", remote, got)
			}
			return
		}
		if got.Zone() != "" || got.Is4In6() {
			t.Errorf("ClientAddr returned the uncanonical %v", got)
		}
		want := referenceClientAddr(p, peer, values)
		if got != want {
			t.Errorf("ClientAddr(%q, %q) = %v, want %v", remote, values, got, want)
		}
		if got != peer && !inHeader(got, values) {
			t.Errorf("ClientAddr(%q, %q) = %v, which is neither the peer nor in the header", remote, values, got)
		}
		checkChain(t, p, remote, values, got, peer)
	})
}

// checkChain holds AppendChain to ClientAddr: the chain runs from the
// client ClientAddr found to the peer, every hop after the client trusted,
// and it appends to what dst held.
func checkChain(t *testing.T, p *Proxies, remote string, values []string, client, peer netip.Addr) {
	t.Helper()
	sentinel := netip.MustParseAddr("192.0.2.255")
	chain, ok := p.AppendChain([]netip.Addr{sentinel}, remote, values)
	if !ok || len(chain) < 2 || chain[0] != sentinel {
		t.Fatalf("AppendChain(%q, %q) = %v, %v; want the sentinel then the chain", remote, values, chain, ok)
	}
	chain = chain[1:]
	if chain[0] != client || chain[len(chain)-1] != peer {
		t.Errorf("AppendChain(%q, %q) = %v; want it from %v to %v", remote, values, chain, client, peer)
	}
	for _, hop := range chain[1:] {
		if !p.trusts(hop) {
			t.Errorf("AppendChain(%q, %q) = %v: %v after the client is not trusted", remote, values, chain, hop)
		}
	}
}

// referenceParse parses an address, with or without a port, by trying
// every form in turn.
func referenceParse(s string) (netip.Addr, bool) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap().WithZone(""), true
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap().WithZone(""), true
	}
	if inner, ok := strings.CutPrefix(s, "["); ok {
		if inner, ok := strings.CutSuffix(inner, "]"); ok {
			if a, err := netip.ParseAddr(inner); err == nil {
				return a.Unmap().WithZone(""), true
			}
		}
	}
	return netip.Addr{}, false
}

// referenceHops splits the header values into their non-empty elements.
func referenceHops(values []string) []string {
	var hops []string
	for _, v := range values {
		for _, e := range strings.Split(v, ",") {
			if e = strings.Trim(e, " \t"); e != "" {
				hops = append(hops, e)
			}
		}
	}
	return hops
}

// referenceClientAddr walks the hops from the right, as ClientAddr's doc
// says, over a list built the plain way.
func referenceClientAddr(p *Proxies, peer netip.Addr, values []string) netip.Addr {
	if !p.trusts(peer) {
		return peer
	}
	hops := referenceHops(values)
	last := peer
	for i := len(hops) - 1; i >= 0; i-- {
		hop, ok := referenceParse(hops[i])
		if !ok {
			return last
		}
		if !p.trusts(hop) {
			return hop
		}
		last = hop
	}
	return last
}

// inHeader reports whether a is one of the header's elements.
func inHeader(a netip.Addr, values []string) bool {
	for _, e := range referenceHops(values) {
		if hop, ok := referenceParse(e); ok && hop == a {
			return true
		}
	}
	return false
}

package identity

import "strings"

// MaxCredentialLen is the longest header value FromCredential reads, in
// bytes. Longer values are ignored, so a hostile header costs bounded work.
const MaxCredentialLen = 16 << 10

// FromCredential returns the identity carried by the Authorization and
// PRIVATE-TOKEN header values, if any. Nothing is verified.
//
// Normalisation, so that one credential spelled two ways routes alike:
//   - Surrounding whitespace is trimmed and each inner run of whitespace
//     counts as one space.
//   - The Authorization scheme (RFC 9110 section 11.4) is matched without
//     regard to ASCII case and lower-cased. Any scheme is accepted; the
//     identity is the scheme and the credential after it (Basic is not
//     decoded: user and password together are the identity).
//   - A Bearer credential that is a JWT (three base64url segments whose
//     payload is a JSON object with non-empty string "iss" and "sub") gives
//     the identity issuer+subject, so an OAuth refresh keeps affinity. Any
//     other bearer credential is an opaque token: the identity is the token.
//   - A PRIVATE-TOKEN is read exactly as a Bearer credential, so the same
//     token in either header is the same identity.
//
// Authorization wins when it carries a credential. A value that is blank, a
// bare scheme ("Bearer" alone) or longer than MaxCredentialLen carries none,
// and PRIVATE-TOKEN is tried instead. Without any credential the result is
// the zero Identity and false: the caller falls back to the address.
func FromCredential(authorization, privateToken string) (Identity, bool) {
	return fromCredential(authorization, privateToken, true)
}

// FromCredentialItself is FromCredential without reading JWT claims: a bearer
// JWT is an opaque token like any other, so its identity is the token
// itself. Claims that nothing verified must never decide whose budget or
// whose cached answers a request uses: anyone can write a JWT naming
// someone else's issuer and subject, but nobody can hold their token.
func FromCredentialItself(authorization, privateToken string) (Identity, bool) {
	return fromCredential(authorization, privateToken, false)
}

func fromCredential(authorization, privateToken string, claims bool) (Identity, bool) {
	if len(authorization) <= MaxCredentialLen {
		if id, ok := fromAuthorization(authorization, claims); ok {
			return id, true
		}
	}
	if len(privateToken) <= MaxCredentialLen {
		if tok := collapseSpace(trimSpace(privateToken)); tok != "" {
			return fromBearer(tok, claims), true
		}
	}
	return Identity{}, false
}

// fromAuthorization reads "scheme credential" from an Authorization value.
func fromAuthorization(v string, claims bool) (Identity, bool) {
	v = trimSpace(v)
	end := 0
	for end < len(v) && !isSpace(v[end]) {
		end++
	}
	scheme, cred := v[:end], collapseSpace(trimSpace(v[end:]))
	if cred == "" {
		return Identity{}, false
	}
	if equalFoldASCII(scheme, "bearer") {
		return fromBearer(cred, claims), true
	}
	return Identity{kind: KindToken, scheme: lowerScheme(scheme), value: cred}, true
}

// fromBearer returns the identity of a normalised, non-empty bearer token;
// with claims, a JWT's is its issuer and subject.
func fromBearer(tok string, claims bool) Identity {
	if !claims {
		return Identity{kind: KindToken, scheme: "bearer", value: tok}
	}
	if id, ok := fromJWT(tok); ok {
		return id
	}
	return Identity{kind: KindToken, scheme: "bearer", value: tok}
}

// isSpace reports ASCII whitespace. HTTP's OWS is only SP and HTAB (RFC 9110
// section 5.6.3), but a credential never contains the others either, so
// treating them alike only makes normalisation more forgiving.
func isSpace(c byte) bool { return byteClass[c]&classSpace != 0 }

// Byte classes, looked up in a table because every byte of a credential is
// classified at least once per request.
const (
	classSpace  = 1 << iota // ASCII whitespace
	classBase64             // the base64url alphabet, RFC 4648 section 5
)

var byteClass = func() (t [256]uint8) {
	for _, c := range []byte(" \t\n\v\f\r") {
		t[c] |= classSpace
	}
	for _, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") {
		t[c] |= classBase64
	}
	return t
}()

// trimSpace removes surrounding ASCII whitespace without allocating.
func trimSpace(s string) string {
	for s != "" && isSpace(s[0]) {
		s = s[1:]
	}
	for s != "" && isSpace(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

// collapseSpace turns each run of whitespace in the trimmed s into a single
// space. It allocates only when s needs rewriting.
func collapseSpace(s string) string {
	clean := true
	for i := 0; i < len(s) && clean; i++ {
		// s is trimmed, so a space is never its last byte.
		clean = !isSpace(s[i]) || (s[i] == ' ' && !isSpace(s[i+1]))
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for i := 0; i < len(s); i++ {
		if isSpace(s[i]) {
			space = true
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// equalFoldASCII reports whether s equals the lower-case ASCII word lower,
// ignoring ASCII case only (strings.EqualFold would also fold, say, the
// Kelvin sign into "k").
func equalFoldASCII(s, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// commonSchemes are lower-cased without allocating.
var commonSchemes = [...]string{"basic", "bearer", "digest", "dpop", "negotiate", "token"}

// lowerScheme lower-cases the ASCII letters of an authentication scheme.
func lowerScheme(s string) string {
	for _, c := range commonSchemes {
		if equalFoldASCII(s, c) {
			return c
		}
	}
	upper := false
	for i := 0; i < len(s) && !upper; i++ {
		upper = 'A' <= s[i] && s[i] <= 'Z'
	}
	if !upper {
		return s
	}
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}

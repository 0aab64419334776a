package session

import (
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"time"
)

// What belongs to whom (the MCP security best practices, "Session
// Hijacking": bind session IDs to user-specific information). A sealed
// session ID, a sealed 2024-11-05 endpoint and a task record carry the
// Opener of whoever opened them: a keyed digest of the caller (the
// gateway's HMAC of a verified issuer and subject, or of the credential),
// never the caller itself. Every later use compares it with the caller's
// here, purely; a caller that is not the opener is told what a caller
// with an unknown ID is told.

// OpenerLen is the length of an opener's digest, in bytes.
const OpenerLen = 8

// Opener is who opened a session, an endpoint or a task: the keyed digest
// of a caller, or nobody (the zero Opener), for a caller without a
// credential, whose session is bound to nothing but its ID. Openers are
// comparable with ==.
type Opener struct {
	digest [OpenerLen]byte
	bound  bool
}

// OpenerOf returns the opener of a caller whose keyed digest is d.
func OpenerOf(d [OpenerLen]byte) Opener { return Opener{digest: d, bound: true} }

// Bound reports whether o names a caller (false for the zero Opener).
func (o Opener) Bound() bool { return o.bound }

// Admits reports whether caller may use what o opened: anyone may use
// what nobody opened; what a caller opened, only that caller. A caller
// without a credential (the zero Opener) is admitted only by the zero
// Opener.
func (o Opener) Admits(caller Opener) bool {
	if !o.bound {
		return true
	}
	return caller.bound && subtle.ConstantTimeCompare(o.digest[:], caller.digest[:]) == 1
}

// Equal reports whether o and p are the same opener (the same as o == p;
// go-cmp compares with it).
func (o Opener) Equal(p Opener) bool { return o == p }

// Short returns the first four bytes of the digest in hex, for a log
// line that must tell two callers apart without naming either; "none" for
// the zero Opener.
func (o Opener) Short() string {
	if !o.bound {
		return "none"
	}
	return hex.EncodeToString(o.digest[:4])
}

// appendTo appends the digest of a bound opener; nothing for the zero one.
func (o Opener) appendTo(b []byte) []byte {
	if !o.bound {
		return b
	}
	return append(b, o.digest[:]...)
}

// AppendBinary appends o's stored form: nothing for the zero Opener, else
// its OpenerLen bytes.
func (o Opener) AppendBinary(b []byte) ([]byte, error) { return o.appendTo(b), nil }

// ParseOpener reads what AppendBinary wrote: the zero Opener from no
// bytes, a bound one from OpenerLen; any other length is not an opener.
func ParseOpener(b []byte) (Opener, bool) {
	switch len(b) {
	case 0:
		return Opener{}, true
	case OpenerLen:
		return OpenerOf([OpenerLen]byte(b)), true
	}
	return Opener{}, false
}

// Why a sealed ID that opened may still not be used. The gateway answers
// both as it answers an ID that does not open (404, -32001): a caller
// learns nothing of a session that is not theirs.
var (
	ErrForeign = errors.New("using session id: opened by another caller")
	ErrExpired = errors.New("using session id: issued longer ago than the maximum age")
)

// Check decides whether caller may use the session c describes at now:
// ErrExpired once maxAge (> 0; otherwise ages are not checked) has passed
// since c was issued, ErrForeign when c's opener does not admit caller.
func (c Claims) Check(caller Opener, now time.Time, maxAge time.Duration) error {
	return check(c.Opener, c.Issued, caller, now, maxAge)
}

// Check is Claims.Check for a sealed endpoint.
func (e Endpoint) Check(caller Opener, now time.Time, maxAge time.Duration) error {
	return check(e.Opener, e.Issued, caller, now, maxAge)
}

func check(opener Opener, issued time.Time, caller Opener, now time.Time, maxAge time.Duration) error {
	if maxAge > 0 && now.Sub(issued) > maxAge {
		return ErrExpired
	}
	if !opener.Admits(caller) {
		return ErrForeign
	}
	return nil
}

package identity

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Verification of bearer JWTs at the edge, with go-jose (a well-kept JOSE
// implementation: signature algorithms, key sets and claim checks are its,
// none home-made). A verified token's iss and sub become the caller's
// identity for routing, limits and cached answers; an unverified one is
// never let through.

// ErrNoToken means the request carries no bearer token; ErrBadToken, that
// its token did not verify. Errors wrap one of them and never quote the
// token.
var (
	ErrNoToken  = errors.New("no bearer token")
	ErrBadToken = errors.New("token did not verify")
)

// DefaultClockSkew is how far exp, nbf and iat may be off.
const DefaultClockSkew = 30 * time.Second

// DefaultMaxLifetime bounds how long a token may be valid for: a token
// that leaks is good to whoever holds it until it expires.
const DefaultMaxLifetime = 24 * time.Hour

// ErrNoAudience means a verifier was asked for with no audience and
// without AudiencesAny.
var ErrNoAudience = errors.New("no audience: a token minted for any other resource would be accepted (RFC 8707; the MCP authorization spec's token audience validation); name this server's audience, or accept any on purpose")

// algorithms are the signatures accepted: RS256, ES256 and EdDSA.
var algorithms = []jose.SignatureAlgorithm{jose.RS256, jose.ES256, jose.EdDSA}

// VerifyOptions configure a Verifier.
type VerifyOptions struct {
	// Issuers are the accepted iss values; at least one.
	Issuers []string
	// Audiences are the accepted aud values; a token must name one. Empty
	// is refused (ErrNoAudience) unless AudiencesAny.
	Audiences []string
	// AudiencesAny, with no Audiences, accepts a token whatever its aud
	// says: only where every token the issuers mint is meant for this
	// server.
	AudiencesAny bool
	// MaxLifetime bounds exp - iat (exp - now for a token without iat); 0
	// means DefaultMaxLifetime, a negative value no bound.
	MaxLifetime time.Duration
	// ClockSkew is the leeway on exp, nbf and iat; 0 means
	// DefaultClockSkew, a negative value none.
	ClockSkew time.Duration
	// KeepClaims makes Verify return every claim of a verified token
	// (Verified.Claims), for authorization rules; off, it decodes only
	// the registered claims it checks.
	KeepClaims bool
	// CacheSize and CacheTTL bound the verified-token cache (tokencache.go):
	// at most CacheSize tokens, each reused for at most CacheTTL after it
	// verified. Either 0 turns the cache off: every call verifies.
	CacheSize int
	CacheTTL  time.Duration
}

// Verifier checks bearer JWTs against a key set that may be replaced while
// it runs (a refreshed JWKS). It is safe for concurrent use.
type Verifier struct {
	opts  VerifyOptions
	keys  atomic.Pointer[jose.JSONWebKeySet]
	cache *tokenCache // nil: none

	verified atomic.Uint64 // signatures checked (tests)
}

// NewVerifier returns a verifier; it verifies nothing until SetKeys.
func NewVerifier(opts VerifyOptions) (*Verifier, error) {
	if len(opts.Issuers) == 0 {
		return nil, errors.New("creating verifier: at least one issuer is required")
	}
	if len(opts.Audiences) == 0 && !opts.AudiencesAny {
		return nil, fmt.Errorf("creating verifier: %w", ErrNoAudience)
	}
	switch {
	case opts.ClockSkew == 0:
		opts.ClockSkew = DefaultClockSkew
	case opts.ClockSkew < 0:
		opts.ClockSkew = 0
	}
	if opts.MaxLifetime == 0 {
		opts.MaxLifetime = DefaultMaxLifetime
	}
	return &Verifier{opts: opts, cache: newTokenCache(opts.CacheSize, opts.CacheTTL)}, nil
}

// SetKeys replaces the key set with a JWKS document (RFC 7517). A document
// that does not decode, or holds no public key, changes nothing.
func (v *Verifier) SetKeys(jwks []byte) error {
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(jwks, &set); err != nil {
		return fmt.Errorf("reading jwks: %w", err)
	}
	var public jose.JSONWebKeySet
	for _, k := range set.Keys {
		if k.Valid() && !isPrivate(k) {
			public.Keys = append(public.Keys, k)
		}
	}
	if len(public.Keys) == 0 {
		return errors.New("reading jwks: no public key")
	}
	v.keys.Store(&public)
	return nil
}

// isPrivate reports a private key in a set meant to hold public ones.
func isPrivate(k jose.JSONWebKey) bool { return !k.IsPublic() }

// Verified is what a verified token says of its caller.
type Verified struct {
	Issuer, Subject string
	// Claims are all the token's claims, as JSON decodes them, when the
	// verifier keeps them (VerifyOptions.KeepClaims); else nil. The
	// verified-token cache hands the same map to every call with the
	// token: read it, never change it.
	Claims map[string]any
}

// Identity is the caller's identity: the verified issuer and subject, so
// that a refreshed token keeps it.
func (c Verified) Identity() Identity {
	return Identity{kind: KindJWT, value: joinIssuerSubject([]byte(c.Issuer), []byte(c.Subject))}
}

// Verify checks the bearer token in an Authorization header value at now:
// signature (RS256, ES256, EdDSA) by a key of the set, an issuer and an
// audience accepted, exp present and not past, nbf and iat not ahead, a
// subject present, a lifetime within MaxLifetime. A token that verified
// a moment ago may be answered from the verified-token cache
// (tokencache.go), with the same verdict.
func (v *Verifier) Verify(authorization string, now time.Time) (Verified, error) {
	c, _, err := v.VerifyCached(authorization, now)
	return c, err
}

// VerifyCached is Verify, saying whether the verified-token cache
// answered (no signature checked).
func (v *Verifier) VerifyCached(authorization string, now time.Time) (Verified, bool, error) {
	tok, ok := bearer(authorization)
	if !ok {
		return Verified{}, false, ErrNoToken
	}
	keys := v.keys.Load()
	if keys == nil {
		return Verified{}, false, fmt.Errorf("%w: no keys loaded", ErrBadToken)
	}
	var d [sha256.Size]byte
	cached := v.cache != nil && len(tok) <= maxCachedToken
	if cached {
		d = tokenDigest(tok)
		if c, ok := v.cache.get(&d, keys, now); ok {
			return c, true, nil
		}
	}
	v.verified.Add(1)
	c, err := v.verify(tok, keys, now)
	if err == nil && cached {
		v.cache.put(&d, c.Verified, keys, now, c.exp, v.opts.ClockSkew)
	}
	return c.Verified, false, err
}

// verifiedUntil is a verification's outcome with the token's exp.
type verifiedUntil struct {
	Verified
	exp time.Time
}

// verify checks tok with keys at now, as Verify says.
func (v *Verifier) verify(tok string, keys *jose.JSONWebKeySet, now time.Time) (verifiedUntil, error) {
	parsed, err := jwt.ParseSigned(tok, algorithms)
	if err != nil {
		return verifiedUntil{}, fmt.Errorf("%w: not a signed JWT", ErrBadToken)
	}
	var c jwt.Claims
	var all map[string]any
	out := []any{&c}
	if v.opts.KeepClaims {
		out = append(out, &all)
	}
	if err := parsed.Claims(keys, out...); err != nil {
		return verifiedUntil{}, fmt.Errorf("%w: signature", ErrBadToken)
	}
	switch {
	case c.Expiry == nil:
		return verifiedUntil{}, fmt.Errorf("%w: no exp", ErrBadToken)
	case c.Subject == "":
		return verifiedUntil{}, fmt.Errorf("%w: no sub", ErrBadToken)
	case !slices.Contains(v.opts.Issuers, c.Issuer):
		return verifiedUntil{}, fmt.Errorf("%w: issuer not accepted", ErrBadToken)
	}
	exp := jwt.Expected{Time: now}
	if len(v.opts.Audiences) > 0 {
		exp.AnyAudience = v.opts.Audiences
	}
	if err := c.ValidateWithLeeway(exp, v.opts.ClockSkew); err != nil {
		return verifiedUntil{}, fmt.Errorf("%w: %w", ErrBadToken, err)
	}
	if v.tooLong(c, now) {
		return verifiedUntil{}, fmt.Errorf("%w: valid for longer than %s", ErrBadToken, v.opts.MaxLifetime)
	}
	return verifiedUntil{Verified{Issuer: c.Issuer, Subject: c.Subject, Claims: all}, c.Expiry.Time()}, nil
}

// tooLong reports a token valid for longer than MaxLifetime: from its iat
// to its exp, or without iat from now (less the clock skew, as a token
// minted a moment ago by a clock a little ahead may say).
func (v *Verifier) tooLong(c jwt.Claims, now time.Time) bool {
	if v.opts.MaxLifetime < 0 {
		return false
	}
	exp := c.Expiry.Time()
	if c.IssuedAt != nil {
		return exp.Sub(c.IssuedAt.Time()) > v.opts.MaxLifetime
	}
	return exp.Sub(now) > v.opts.MaxLifetime+v.opts.ClockSkew
}

// bearer returns the token of a "Bearer <token>" value, normalised as
// FromCredential reads it.
func bearer(v string) (string, bool) {
	if len(v) > MaxCredentialLen {
		return "", false
	}
	v = trimSpace(v)
	end := 0
	for end < len(v) && !isSpace(v[end]) {
		end++
	}
	scheme, tok := v[:end], trimSpace(v[end:])
	if !equalFoldASCII(scheme, "bearer") || tok == "" {
		return "", false
	}
	return tok, true
}

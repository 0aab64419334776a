package identity

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"sync"
)

// MinSaltLen is the shortest salt NewKeyer accepts, in bytes.
const MinSaltLen = 16

// ErrShortSalt is returned, wrapped, by NewKeyer for a salt shorter than
// MinSaltLen.
var ErrShortSalt = errors.New("salt too short")

// Keyer turns identities into routing keys: HMAC-SHA256 keyed by a secret
// salt over the identity, the first 8 bytes of the MAC read big-endian.
// The salt is what makes a key useless as a credential's fingerprint:
// without it, anyone holding a candidate token could confirm it against a
// key seen in a log or a metric. Every gateway instance that must route
// alike needs the same salt.
//
// A Keyer is safe for concurrent use. It must not be copied after first use.
type Keyer struct {
	salt []byte    // private copy, never modified
	pool sync.Pool // of *keyState, each with its own HMAC
}

// keyState is one goroutine's scratch space for Key.
type keyState struct {
	mac hash.Hash
	buf []byte
	sum [sha256.Size]byte
}

// maxPooledBuf caps the scratch buffer kept between calls; it fits the
// largest identity, a MaxCredentialLen credential and its scheme.
const maxPooledBuf = 2 * MaxCredentialLen

// NewKeyer returns a Keyer for the secret salt, which must be at least
// MinSaltLen bytes. The salt is copied.
func NewKeyer(salt []byte) (*Keyer, error) {
	if len(salt) < MinSaltLen {
		return nil, fmt.Errorf("creating keyer: %w: %d bytes, need at least %d", ErrShortSalt, len(salt), MinSaltLen)
	}
	k := &Keyer{salt: bytes.Clone(salt)}
	k.pool.New = func() any { return &keyState{mac: hmac.New(sha256.New, k.salt)} }
	return k, nil
}

// Key returns the routing key of id. Equal identities give equal keys;
// identities of different kinds never share their authenticated bytes (see
// appendKeyInput). It does not allocate once its scratch space is warm.
func (k *Keyer) Key(id Identity) uint64 {
	st := k.pool.Get().(*keyState)
	st.buf = id.appendKeyInput(st.buf[:0])
	st.mac.Reset()
	st.mac.Write(st.buf)
	key := binary.BigEndian.Uint64(st.mac.Sum(st.sum[:0]))
	clear(st.buf) // no credential bytes linger in the pool
	if cap(st.buf) > maxPooledBuf {
		st.buf = nil
	}
	k.pool.Put(st)
	return key
}

package session

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

// A sealed session ID is what the client holds instead of the replica's own
// Mcp-Session-Id: the replica's name, the replica's session ID and the issue
// time, encrypted and authenticated with AES-256-GCM. Any gateway process
// with the key opens it and knows where the session lives, so the gateway
// keeps no session table and survives restarts; nobody without
// the key can read the fleet's topology from it or forge one.
//
// Layout, then base64url without padding:
//
//	version (1) | key id (1) | nonce (12) | seal(issued unix s (8) | opener (0 or 8) | len(replica) (1) | replica | session ID)
//
// version and key id are authenticated as additional data. The result is
// visible ASCII, as Mcp-Session-Id requires (2025-11-25 transports).
//
// The opener (binding.go) is there only when the version carries
// boundFlag: an ID sealed for an opener has version 0x81, one sealed for
// nobody keeps version 1, byte for byte what gateways sealed before
// openers existed, so that those IDs still open (bound to nobody) and an
// earlier gateway still opens what a later one seals for nobody.

const (
	sealVersion = 1
	// boundFlag, in the version byte, says the plaintext holds an opener's
	// digest after the issue time. It applies to every kind of token.
	boundFlag = 0x80
	headerLen = 2
	nonceLen  = 12
	// MaxTokenLen bounds what Open will look at; longer IDs are malformed.
	MaxTokenLen = 1024
	// MaxClaimBytes bounds the replica name plus the replica's session ID
	// that Seal accepts, so that every sealed ID, its opener's digest
	// with it, opens within MaxTokenLen.
	MaxClaimBytes = MaxTokenLen/4*3 - headerLen - nonceLen - 16 - 9 - OpenerLen
)

// Errors from Open, one per reason a session ID is refused; each is answered
// 404 with -32001 so the client re-initializes.
var (
	ErrMalformed  = errors.New("opening session id: malformed")
	ErrUnknownKey = errors.New("opening session id: unknown or retired key")
	ErrTampered   = errors.New("opening session id: authentication failed")
)

// Key is one key of the ring: an id that travels in the sealed ID, and 32
// bytes of secret.
type Key struct {
	ID     uint8
	Secret [32]byte
}

// Keyring seals with its current key and opens with any of its keys, so that
// keys rotate without dropping sessions: add a new current key, keep the old
// one as previous until the sessions it sealed have ended, then retire it.
type Keyring struct {
	current uint8
	aeads   [256]cipher.AEAD // by key id; nil for ids not in the ring
	// scope is authenticated with every token after its header: a token
	// sealed under one scope opens under no other (Scoped).
	scope []byte
}

// Scoped returns a ring of the same keys whose tokens are bound to scope,
// authenticated as additional data: a token of one scope, such as one
// service of a gateway, is refused (ErrTampered) by a ring of another or
// of none, and the ring itself keeps opening its own. The empty scope is
// the ring itself.
func (k *Keyring) Scoped(scope string) *Keyring {
	s := *k
	s.scope = []byte(scope)
	return &s
}

// NewKeyring returns a ring whose first key is the current one. Key ids must
// be unique.
func NewKeyring(keys []Key) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("building keyring: no keys")
	}
	k := &Keyring{current: keys[0].ID}
	for _, key := range keys {
		if k.aeads[key.ID] != nil {
			return nil, fmt.Errorf("building keyring: duplicate key id %d", key.ID)
		}
		block, err := aes.NewCipher(key.Secret[:])
		if err != nil {
			return nil, fmt.Errorf("building keyring: %w", err)
		}
		if k.aeads[key.ID], err = cipher.NewGCM(block); err != nil {
			return nil, fmt.Errorf("building keyring: %w", err)
		}
	}
	return k, nil
}

// Claims is what a sealed session ID holds.
type Claims struct {
	Replica   string    // the replica's name (or address, for a discovered one)
	SessionID string    // the replica's own Mcp-Session-Id
	Issued    time.Time // when the gateway sealed it (second precision)
	// Opener is who opened the session; the zero Opener for nobody.
	Opener Opener
}

// Seal returns the sealed session ID for c. rnd supplies the nonce
// (crypto/rand.Reader in production). The replica name must be 1 to 255
// bytes.
func (k *Keyring) Seal(c Claims, rnd io.Reader) (string, error) {
	return k.seal(sealVersion, c, rnd)
}

// seal seals c as a token of the given version, which is authenticated
// with the rest: a token of one kind never opens as another.
func (k *Keyring) seal(version byte, c Claims, rnd io.Reader) (string, error) {
	if len(c.Replica) == 0 || len(c.Replica) > 255 {
		return "", fmt.Errorf("sealing session id: replica name of %d bytes", len(c.Replica))
	}
	if len(c.Replica)+len(c.SessionID) > MaxClaimBytes {
		return "", fmt.Errorf("sealing session id: replica name and session id of %d bytes, limit %d", len(c.Replica)+len(c.SessionID), MaxClaimBytes)
	}
	aead := k.aeads[k.current]
	if c.Opener.bound {
		version |= boundFlag
	}
	plain := make([]byte, 0, 9+OpenerLen+len(c.Replica)+len(c.SessionID))
	plain = binary.BigEndian.AppendUint64(plain, uint64(c.Issued.Unix()))
	plain = c.Opener.appendTo(plain)
	plain = append(plain, byte(len(c.Replica)))
	plain = append(plain, c.Replica...)
	plain = append(plain, c.SessionID...)
	raw := make([]byte, headerLen+nonceLen, headerLen+nonceLen+len(plain)+aead.Overhead())
	raw[0], raw[1] = version, k.current
	if _, err := io.ReadFull(rnd, raw[headerLen:]); err != nil {
		return "", fmt.Errorf("sealing session id: reading nonce: %w", err)
	}
	raw = aead.Seal(raw, raw[headerLen:headerLen+nonceLen], plain, k.additional(raw[:headerLen]))
	return base64.RawURLEncoding.EncodeToString(raw), nil
}

// additional is the data authenticated beside the plaintext: the header,
// then the scope.
func (k *Keyring) additional(header []byte) []byte {
	if len(k.scope) == 0 {
		return header
	}
	return append(append(make([]byte, 0, len(header)+len(k.scope)), header...), k.scope...)
}

// Open checks and decrypts a sealed session ID. It refuses anything it did
// not seal: malformed input, a key id not in the ring (or retired), and any
// change to a single bit. Whether the caller may use the session is
// Claims.Check's to say.
func (k *Keyring) Open(token string) (Claims, error) {
	return k.open(sealVersion, token)
}

// open opens a token of the given version, bound to an opener or not; any
// other version is malformed.
func (k *Keyring) open(version byte, token string) (Claims, error) {
	var buf [MaxTokenLen]byte
	if len(token) > MaxTokenLen || base64.RawURLEncoding.DecodedLen(len(token)) > len(buf) || !base64URL(token) {
		return Claims{}, ErrMalformed
	}
	// One spelling only: Strict refuses the non-zero unused bits that would
	// let a second spelling of a real ID open (and, say, DELETE its session).
	n, err := base64.RawURLEncoding.Strict().Decode(buf[:], []byte(token))
	if err != nil || n < headerLen+nonceLen+16+9 || buf[0]&^boundFlag != version {
		return Claims{}, ErrMalformed
	}
	raw := buf[:n]
	aead := k.aeads[raw[1]]
	if aead == nil {
		return Claims{}, ErrUnknownKey
	}
	plain, err := aead.Open(raw[headerLen+nonceLen:headerLen+nonceLen], raw[headerLen:headerLen+nonceLen],
		raw[headerLen+nonceLen:], k.additional(raw[:headerLen]))
	if err != nil {
		return Claims{}, ErrTampered
	}
	c := Claims{Issued: time.Unix(int64(binary.BigEndian.Uint64(plain)), 0)}
	rest := plain[8:]
	if raw[0]&boundFlag != 0 {
		if len(rest) < OpenerLen+1 {
			return Claims{}, ErrMalformed // authentic, so only a bug of ours could make this
		}
		c.Opener, rest = OpenerOf([OpenerLen]byte(rest[:OpenerLen])), rest[OpenerLen:]
	}
	nameLen := int(rest[0])
	if nameLen == 0 || len(rest) < 1+nameLen {
		return Claims{}, ErrMalformed // authentic, so only a bug of ours could make this
	}
	c.Replica, c.SessionID = string(rest[1:1+nameLen]), string(rest[1+nameLen:])
	return c, nil
}

// base64URL reports whether s uses only the unpadded base64url alphabet
// (RFC 4648 section 5): the decoder would skip line breaks, a second
// spelling of the same ID.
func base64URL(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

package session

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"time"
)

// A sealed event ID is the id: a client of the 2025-11-25 transport sees
// on every event of a legacy SSE stream the gateway relays, and sends back
// as Last-Event-ID to resume the stream (2025-11-25 transports,
// "Resumability and Redelivery"). It names the replica, the stream, the
// event's position in it and the replica's own event ID (when the replica
// sent one), sealed with the session keyring like a session ID: any gateway
// process with the key opens it and knows where to resume, nobody else can
// read the topology from it or forge a position.
//
// The layout is a sealed session ID's with version 3, authenticated, so
// that no other kind of token opens as an event ID. Its claims are the
// replica's name and, in place of a session ID,
//
//	flags (1) | stream (16) | position (8) | session digest (8) | replica's event ID
//
// where the session digest binds the ID to the sealed session ID the
// client holds: an ID seen in one session opens in no other.
const eventVersion = 3

// eventFixed is the length of the fixed part of an event ID's payload.
const eventFixed = 1 + 16 + 8 + 8

// flagStandalone marks an event of a standalone GET stream.
const flagStandalone = 1

// StreamKey names one stream of events: random, unique to the stream.
type StreamKey [16]byte

// EventID is what a sealed event ID holds.
type EventID struct {
	Replica string    // the replica's name (or address, for a discovered one)
	Stream  StreamKey // the stream the event belongs to
	Pos     uint64    // the event's position in the stream, from 0 (a gateway's priming event)
	// Upstream is the replica's own ID of this event or of the last one
	// before it that had one; "" when the replica sent none.
	Upstream string
	// Standalone marks an event of a GET stream (no request behind it):
	// resuming it opens a new stream when there is nothing to replay.
	Standalone bool
}

// SealEvent returns the sealed event ID for e within the session the client
// holds as sessionID (its sealed Mcp-Session-Id). rnd supplies the nonce.
// The replica name must be 1 to 255 bytes and the replica's event ID fit
// within MaxClaimBytes with it.
func (k *Keyring) SealEvent(sessionID string, e EventID, rnd io.Reader) (string, error) {
	var flags byte
	if e.Standalone {
		flags |= flagStandalone
	}
	payload := make([]byte, 0, eventFixed+len(e.Upstream))
	payload = append(payload, flags)
	payload = append(payload, e.Stream[:]...)
	payload = binary.BigEndian.AppendUint64(payload, e.Pos)
	payload = append(payload, sessionDigest(sessionID)...)
	payload = append(payload, e.Upstream...)
	tok, err := k.seal(eventVersion, Claims{Replica: e.Replica, SessionID: string(payload), Issued: time.Unix(0, 0)}, rnd)
	if err != nil {
		return "", fmt.Errorf("sealing event id: %w", err)
	}
	return tok, nil
}

// OpenEvent checks and decrypts a sealed event ID seen in the session the
// client holds as sessionID. It refuses what Open refuses, with the same
// errors, any token that is not an event ID, and (ErrTampered) an event ID
// of another session.
func (k *Keyring) OpenEvent(sessionID, token string) (EventID, error) {
	c, err := k.open(eventVersion, token)
	if err != nil {
		return EventID{}, err
	}
	p := c.SessionID
	if len(p) < eventFixed || p[0]&^flagStandalone != 0 {
		return EventID{}, ErrMalformed // authentic, so only a bug of ours could make this
	}
	if p[1+16+8:eventFixed] != string(sessionDigest(sessionID)) {
		return EventID{}, ErrTampered
	}
	e := EventID{
		Replica:    c.Replica,
		Pos:        binary.BigEndian.Uint64([]byte(p[1+16 : 1+16+8])),
		Upstream:   p[eventFixed:],
		Standalone: p[0]&flagStandalone != 0,
	}
	copy(e.Stream[:], p[1:1+16])
	return e, nil
}

// sessionDigest is the first 8 bytes of SHA-256 over a sealed session ID.
func sessionDigest(sessionID string) []byte {
	d := sha256.Sum256([]byte(sessionID))
	return d[:8]
}

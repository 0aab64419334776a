package session

import (
	"io"
	"time"
)

// A sealed endpoint is what a client of the 2024-11-05 HTTP+SSE transport
// holds instead of the message endpoint its replica named in the stream's
// endpoint event (2024-11-05 transports, "HTTP with SSE"): the replica's
// name and the replica's own endpoint (path and query, the replica's
// session ID among them), sealed like a session ID with the same keyring,
// so that keys rotate the same way and any gateway process with the key
// routes the client's POSTs without a store.
//
// The layout is a sealed session ID's with version 2, which is
// authenticated: a session ID never opens as an endpoint, nor an endpoint
// as a session ID.
const endpointVersion = 2

// Endpoint is what a sealed endpoint holds.
type Endpoint struct {
	Replica string    // the replica's name (or address, for a discovered one)
	Target  string    // the replica's message endpoint: path and query, e.g. /messages?sessionId=...
	Issued  time.Time // when the gateway sealed it (second precision)
	// Opener is who opened the stream the endpoint belongs to; the zero
	// Opener for nobody.
	Opener Opener
}

// SealEndpoint returns the sealed token for e, on the terms of Seal: rnd
// supplies the nonce, the replica name is 1 to 255 bytes, and name and
// target together at most MaxClaimBytes.
func (k *Keyring) SealEndpoint(e Endpoint, rnd io.Reader) (string, error) {
	return k.seal(endpointVersion, Claims{Replica: e.Replica, SessionID: e.Target, Issued: e.Issued, Opener: e.Opener}, rnd)
}

// OpenEndpoint checks and decrypts a sealed endpoint. It refuses what Open
// refuses, with the same errors, and any token that is not an endpoint's.
func (k *Keyring) OpenEndpoint(token string) (Endpoint, error) {
	c, err := k.open(endpointVersion, token)
	if err != nil {
		return Endpoint{}, err
	}
	return Endpoint{Replica: c.Replica, Target: c.SessionID, Issued: c.Issued, Opener: c.Opener}, nil
}

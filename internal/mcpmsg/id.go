package mcpmsg

import (
	"encoding/json"
	"fmt"
)

// WithID returns the JSON-RPC message msg with its id replaced by id (raw
// JSON): a recorded answer given to a duplicate request that used another id.
func WithID(msg, id []byte) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(msg, &m); err != nil {
		return nil, fmt.Errorf("replacing id: %w", err)
	}
	if len(id) == 0 {
		id = []byte("null")
	}
	m["id"] = id
	return json.Marshal(m)
}

// IsResponseTo reports whether msg is a JSON-RPC response (result or error)
// whose id is id: the final answer of that request.
func IsResponseTo(msg, id []byte) bool {
	m, err := Parse(msg)
	return err == nil && m.Kind == KindResponse && !m.Batch && string(m.ID) == string(id)
}

// ResponseFailed reports whether a JSON-RPC response says the request did
// not succeed: a JSON-RPC error, or a tool result with "isError": true.
func ResponseFailed(msg []byte) bool {
	i := skipWS(msg, 0)
	if i >= len(msg) || msg[i] != '{' {
		return true
	}
	failed := false
	_, err := eachMember(msg, i, 1, func(key []byte, s, e int) error {
		switch string(key) {
		case "error":
			failed = true
		case "result":
			if msg[s] == '{' {
				_, _ = eachMember(msg[s:e], 0, 2, func(k []byte, rs, re int) error {
					if string(k) == "isError" && string(msg[s+rs:s+re]) == "true" {
						failed = true
					}
					return nil
				})
			}
		}
		return nil
	})
	return failed || err != nil
}

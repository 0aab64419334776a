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

package cache

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
)

// Entry is what Keep decides to store.
type Entry struct {
	// Key is where: the lookup's public or private key.
	Key string
	// Value is the result object, as the replica wrote it.
	Value []byte
	// TTL is how long it lives.
	TTL time.Duration
}

// result is what Keep reads of a result object.
type result struct {
	ResultType string          `json:"resultType"`
	TTLMs      *float64        `json:"ttlMs"`
	CacheScope *string         `json:"cacheScope"`
	IsError    bool            `json:"isError"`
	TaskID     json.RawMessage `json:"taskId"`
}

// Keep decides whether the final answer to a looked-up request is kept: msg
// is the JSON-RPC response. It is kept only when it is a success that says
// it may be (see the package doc); ok is false otherwise.
func Keep(l Lookup, msg []byte, r Rules) (e Entry, ok bool) {
	if l.Bypass != "" {
		return Entry{}, false
	}
	var m struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(msg, &m) != nil || present(m.Error) || !present(m.Result) {
		return Entry{}, false
	}
	var res result
	if json.Unmarshal(m.Result, &res) != nil {
		return Entry{}, false
	}
	switch res.ResultType {
	case "", "complete":
	default: // input_required (SEP-2322), task (SEP-2663): steps, not answers
		return Entry{}, false
	}
	e.Value = bytes.Clone(m.Result)
	if l.Tool {
		if res.IsError || present(res.TaskID) || r.ToolTTL <= 0 {
			return Entry{}, false
		}
		e.Key, e.TTL = l.Private, min(r.ToolTTL, r.MaxTTL)
		return e, e.Key != ""
	}
	if res.TTLMs == nil || !(*res.TTLMs > 0) {
		return Entry{}, false
	}
	e.TTL = min(time.Duration(*res.TTLMs)*time.Millisecond, r.MaxTTL)
	switch {
	case res.CacheScope != nil && *res.CacheScope == "public":
		e.Key = l.Public
	default:
		// "private", or no scope: never wider than the server said.
		e.Key = l.Private
	}
	return e, e.Key != "" && e.TTL > 0
}

// Answer is the response to a request answered from an entry: value under
// the request's id, with ttlMs set to what remains of its life (never more
// than the replica gave) and every other member as the replica wrote it.
func Answer(value, id []byte, remaining time.Duration, tool bool) ([]byte, error) {
	res := value
	if !tool {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(value, &m); err != nil {
			return nil, err
		}
		if old, ok := m["ttlMs"]; ok {
			ms := remaining.Milliseconds()
			if v, err := strconv.ParseFloat(string(old), 64); err == nil && float64(ms) > v {
				ms = int64(v)
			}
			m["ttlMs"] = strconv.AppendInt(nil, max(ms, 0), 10)
		}
		b, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		res = b
	}
	if len(id) == 0 {
		id = []byte("null")
	}
	out := make([]byte, 0, len(res)+len(id)+32)
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, id...)
	out = append(out, `,"result":`...)
	out = append(out, res...)
	return append(out, '}'), nil
}

package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
)

// Bypass reasons: why a request of a cacheable method is not looked up.
const (
	BypassInput    = "input"     // it carries inputResponses or requestState
	BypassTool     = "tool"      // a tool not named in cache.tools
	BypassReadOnly = "read_only" // a named tool the replicas do not declare readOnlyHint
	BypassCaller   = "caller"    // a tools/call without a credential
	BypassParams   = "params"    // params that do not decode
)

// families maps each method with SEP-2549 hints to the generation its lists
// depend on ("" for resources/read, which depends on its URI).
var families = map[string]string{
	"server/discover":          "discover",
	"tools/list":               "list:tools",
	"prompts/list":             "list:prompts",
	"resources/list":           "list:resources",
	"resources/templates/list": "list:resources",
	"resources/read":           "",
}

// Hinted reports whether results of method carry SEP-2549 hints.
func Hinted(method string) bool {
	_, ok := families[method]
	return ok
}

// Request is what the decision knows of one request.
type Request struct {
	// Method is the JSON-RPC method; Version the protocol version the
	// request speaks, which shapes the result and so is part of the key.
	Method, Version string
	// Params is the raw params member (nil when absent).
	Params []byte
	// Caller is the authorization context: a digest of the credential
	// itself; "" when the request carries none.
	Caller string
	// ReadOnly reports that the replicas declare the called tool
	// readOnlyHint (tools/call only); unknown means false.
	ReadOnly bool
}

// Rules are the operator's choices.
type Rules struct {
	// Tools are the tools whose tools/call results may be kept.
	Tools map[string]bool
	// ToolTTL is how long a kept tool result lives.
	ToolTTL time.Duration
	// MaxTTL bounds every entry's life, whatever ttlMs says.
	MaxTTL time.Duration
}

// Lookup is where a request's answer may be found and kept.
type Lookup struct {
	// Bypass, when not "", says why the request is not cached at all.
	Bypass string
	// Public is the key of the entry shared by everyone; "" for tool
	// results. Private is the key of the caller's own entry; "" without a
	// credential.
	Public, Private string
	// Gen is the generation the entries depend on.
	Gen string
	// Tool marks a tools/call lookup.
	Tool bool
}

// Keys returns the keys to look up, public first.
func (l Lookup) Keys() []string {
	var ks []string
	for _, k := range []string{l.Public, l.Private} {
		if k != "" {
			ks = append(ks, k)
		}
	}
	return ks
}

// params are the members of params that decide a result.
type params struct {
	Name           string          `json:"name"`
	URI            string          `json:"uri"`
	Cursor         string          `json:"cursor"`
	Arguments      json.RawMessage `json:"arguments"`
	InputResponses json.RawMessage `json:"inputResponses"`
	RequestState   json.RawMessage `json:"requestState"`
}

// Plan decides whether and where a request's answer may be found. ok is
// false for a method the cache never keeps.
func Plan(q Request, r Rules) (l Lookup, ok bool) {
	fam, hinted := families[q.Method]
	if !hinted && q.Method != "tools/call" {
		return Lookup{}, false
	}
	var p params
	if len(bytes.TrimSpace(q.Params)) > 0 && json.Unmarshal(q.Params, &p) != nil {
		return Lookup{Bypass: BypassParams}, true
	}
	// SEP-2322: a retry that answers the server's input requests, or
	// carries its state, is a step of one exchange, never a cacheable read.
	if present(p.InputResponses) || present(p.RequestState) {
		return Lookup{Bypass: BypassInput}, true
	}
	if q.Method == "tools/call" {
		switch {
		case !r.Tools[p.Name]:
			return Lookup{Bypass: BypassTool}, true
		case !q.ReadOnly:
			return Lookup{Bypass: BypassReadOnly}, true
		case q.Caller == "":
			return Lookup{Bypass: BypassCaller}, true
		}
		args, err := canonical(p.Arguments)
		if err != nil {
			return Lookup{Bypass: BypassParams}, true
		}
		gen := "call:" + p.Name
		return Lookup{Tool: true, Gen: digest("gen", gen), Private: digest("call", q.Version, p.Name, args, q.Caller)}, true
	}
	what := p.Cursor
	if q.Method == "resources/read" {
		fam, what = "uri:"+p.URI, p.URI
	}
	anon := "credentialed"
	if q.Caller == "" {
		// A public answer given to a caller without a credential is kept
		// apart: one given only to callers with one never reaches a caller
		// without.
		anon = "anonymous"
	}
	l = Lookup{Gen: digest("gen", fam), Public: digest("public", q.Version, q.Method, what, anon)}
	if q.Caller != "" {
		l.Private = digest("private", q.Version, q.Method, what, q.Caller)
	}
	return l, true
}

// InvalidatedBy returns the generation a notification from a replica moves
// on, or "" for one that invalidates nothing.
func InvalidatedBy(method string, raw []byte) string {
	switch method {
	case "notifications/tools/list_changed":
		return digest("gen", "list:tools")
	case "notifications/prompts/list_changed":
		return digest("gen", "list:prompts")
	case "notifications/resources/list_changed":
		return digest("gen", "list:resources")
	case "notifications/resources/updated":
		var p params
		if json.Unmarshal(raw, &p) == nil && p.URI != "" {
			return digest("gen", "uri:"+p.URI)
		}
	}
	return ""
}

func present(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && !bytes.Equal(t, []byte("null"))
}

// digest is a key: SHA-256 over length-prefixed parts, so no two lists of
// parts share one and no part can be read back from it.
func digest(parts ...string) string {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		l := len(p)
		for i := range n {
			n[i] = byte(l >> (8 * i))
		}
		h.Write(n[:])
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// canonical returns one spelling of a JSON value (mcpmsg.Canonical): two
// arguments share a key only when they are the same value.
func canonical(raw json.RawMessage) (string, error) {
	if !present(raw) {
		return "{}", nil
	}
	b, err := mcpmsg.Canonical(raw)
	return string(b), err
}

// Invalidation returns the generation a JSON-RPC message from a replica
// moves on (see InvalidatedBy), or "" for any other message.
func Invalidation(msg []byte) string {
	if !bytes.Contains(msg, []byte("notifications/")) {
		return ""
	}
	var m struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(msg, &m) != nil {
		return ""
	}
	return InvalidatedBy(m.Method, m.Params)
}

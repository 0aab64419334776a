package gateway

import (
	"encoding/json"
	"sync"

	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
)

// A delivered request may be sent again only when running it twice does no
// harm. For tools/call, the replicas say so themselves: the gateway learns
// each tool's readOnlyHint and idempotentHint from the tools/list answers it
// relays (2025-11-25 "Tools", ToolAnnotations). A tool it has not seen
// declared is not safe.

// maxTools bounds the annotations remembered.
const maxTools = 10_000

// annotations maps tool names to what their replicas declare of them.
type annotations struct {
	mu   sync.RWMutex // guards safe
	safe map[string]hints
}

// hints are one tool's declared annotations that matter here.
type hints struct {
	safe     bool // readOnlyHint or idempotentHint: a call may run twice
	readOnly bool // readOnlyHint: a call's result may be cached
}

func newAnnotations() *annotations { return &annotations{safe: make(map[string]hints)} }

// readOnly reports whether the replicas declare tool readOnlyHint; a tool
// not seen declared is not.
func (a *annotations) readOnly(tool string) bool {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.safe[tool].readOnly
}

// knows reports whether the replicas declared tool in a tools/list the
// gateway relayed or listed.
func (a *annotations) knows(tool string) bool {
	a.mu.RLock()
	defer a.mu.RUnlock()
	_, ok := a.safe[tool]
	return ok
}

// safeToRepeat reports whether a request may run twice: methods that only
// read, and calls of tools declared read-only or idempotent.
func (a *annotations) safeToRepeat(q *request) bool {
	switch q.msg.Method {
	case "ping", "server/discover", "tools/list", "resources/list", "resources/read",
		"resources/templates/list", "prompts/list", "prompts/get", "completion/complete", "tasks/get", "tasks/list":
		return !q.msg.Batch
	case "tools/call":
		a.mu.RLock()
		defer a.mu.RUnlock()
		return !q.msg.Batch && a.safe[q.msg.Name].safe
	}
	return false
}

// learn reads a tools/list answer (one JSON-RPC message) and records each
// tool's hints. Later answers replace earlier ones tool by tool.
func (a *annotations) learn(msg []byte) {
	var m struct {
		Result *struct {
			Tools []struct {
				Name        string `json:"name"`
				Annotations *struct {
					ReadOnly   bool `json:"readOnlyHint"`
					Idempotent bool `json:"idempotentHint"`
				} `json:"annotations"`
			} `json:"tools"`
		} `json:"result"`
	}
	if json.Unmarshal(msg, &m) != nil || m.Result == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, t := range m.Result.Tools {
		var h hints
		if t.Annotations != nil {
			h = hints{safe: t.Annotations.ReadOnly || t.Annotations.Idempotent, readOnly: t.Annotations.ReadOnly}
		}
		if _, known := a.safe[t.Name]; !known && len(a.safe) >= maxTools {
			continue
		}
		a.safe[t.Name] = h
	}
}

// watchesTools reports whether a request's answer lists tools.
func watchesTools(q *request) bool {
	return q.msg.Method == "tools/list" && !q.msg.Batch && q.msg.Kind == mcpmsg.KindRequest
}

package stdio

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
)

// maxToolPages bounds the pages of tools/list the bridge reads of a child.
const maxToolPages = 100

// toolsFetchTimeout bounds the bridge's own tools/list of a child.
const toolsFetchTimeout = 10 * time.Second

// toolsRev names one version of a child's tool list: its run, and the
// tools list_changed notifications it sent in that run.
type toolsRev struct{ gen, changed int }

// toolHeaders keeps the Mcp-Param-* bindings of a child's tools, as the
// child listed them at one toolsRev.
type toolHeaders struct {
	mu       sync.Mutex // guards the fields below
	known    bool
	rev      toolsRev
	bindings map[string][]paramBinding
}

// checkParams returns how a 2026-07-28 server refuses a tools/call whose
// Mcp-Param-* headers do not mirror its arguments (400, -32020; SEP-2243,
// "Server validation"), nil when they do. The headers never reach a child
// on stdin, so the bridge checks them for it, against the x-mcp-header
// annotations of the tool as the child lists it. When the list cannot be
// had, or the child has no such tool, the call goes on unchecked, as an
// SDK server lets through a tool it does not know.
func (b *Bridge) checkParams(r *http.Request, body []byte, tool string) *mcpmsg.Error {
	bindings, err := b.paramBindings(r.Context(), tool)
	if err != nil {
		b.log.Debug("listing the child's tools to check Mcp-Param headers", "error", err)
		return nil
	}
	if len(bindings) == 0 {
		return nil
	}
	var m struct {
		Params json.RawMessage `json:"params"`
	}
	_ = json.Unmarshal(body, &m)
	if err := checkParamHeaders(r.Header, m.Params, bindings); err != nil {
		return &mcpmsg.Error{Status: http.StatusBadRequest, Code: mcpmsg.CodeHeaderMismatch, Message: err.Error()}
	}
	return nil
}

// paramBindings returns the bindings of the child's tool named tool,
// listing the child's tools when those known are of another run or from
// before a list_changed.
func (b *Bridge) paramBindings(ctx context.Context, tool string) ([]paramBinding, error) {
	rev := b.child.toolsRevision()
	t := &b.tools
	t.mu.Lock()
	if t.known && t.rev == rev {
		defer t.mu.Unlock()
		return t.bindings[tool], nil
	}
	t.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, toolsFetchTimeout)
	defer cancel()
	bindings, err := b.listToolBindings(ctx)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.known, t.rev, t.bindings = true, rev, bindings
	t.mu.Unlock()
	return bindings[tool], nil
}

// listToolBindings lists the child's tools, every page, on a session of
// its own, and returns their bindings.
func (b *Bridge) listToolBindings(ctx context.Context) (map[string][]paramBinding, error) {
	cs, err := b.child.Open()
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	all := map[string][]paramBinding{}
	cursor := ""
	for page := 1; page <= maxToolPages; page++ {
		params := `{}`
		if cursor != "" {
			c, _ := json.Marshal(cursor)
			params = `{"cursor":` + string(c) + `}`
		}
		id := []byte(strconv.Itoa(page))
		if err := cs.Send([]byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"method":"tools/list","params":` + params + `}`)); err != nil {
			return nil, err
		}
		result, err := awaitResult(ctx, cs, id)
		if err != nil {
			return nil, err
		}
		bindings, err := toolBindings(result)
		if err != nil {
			return nil, err
		}
		for name, bs := range bindings {
			all[name] = bs
		}
		var next struct {
			Cursor string `json:"nextCursor"`
		}
		_ = json.Unmarshal(result, &next)
		if cursor = next.Cursor; cursor == "" {
			return all, nil
		}
	}
	return nil, fmt.Errorf("the child's tools/list has more than %d pages", maxToolPages)
}

// awaitResult waits for the result of the request id of cs, skipping any
// other message (a notification the child sends every session).
func awaitResult(ctx context.Context, cs *Session, id []byte) (json.RawMessage, error) {
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case msg, ok := <-cs.Messages():
			if !ok {
				return nil, ErrSessionEnded
			}
			if !mcpmsg.IsResponseTo(msg, id) {
				continue
			}
			var r struct {
				Result json.RawMessage `json:"result"`
				Error  *struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(msg, &r); err != nil {
				return nil, fmt.Errorf("decoding the child's answer: %w", err)
			}
			if r.Error != nil {
				return nil, fmt.Errorf("the child answered error %d: %s", r.Error.Code, r.Error.Message)
			}
			return r.Result, nil
		}
	}
}

package stdio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// initID is the id of the gateway's own initialize: a string, where the
// mux hands out numbers.
const initID = `"mcpfleet-initialize"`

// clientCapabilities are what the gateway declares to a child: what its
// clients may do for a server; a request no session can take is answered
// with an error (Mux.serverRequest).
const clientCapabilities = `{"roots":{"listChanged":true},"sampling":{},"elicitation":{}}`

// initialize is the gateway's handshake with a new run of the child (MCP
// 2025-11-25, "Lifecycle"): initialize with the newest version, wait for
// the result, then notifications/initialized. It returns the result.
func (c *Child) initialize(ctx context.Context, p *process) (json.RawMessage, error) {
	req := `{"jsonrpc":"2.0","id":` + initID + `,"method":"initialize","params":{"protocolVersion":"` + ProtocolVersion +
		`","capabilities":` + clientCapabilities + `,"clientInfo":{"name":"mcpfleet","version":"1"}}}`
	result, err := c.exchange(ctx, p, initID, req)
	if err != nil {
		return nil, fmt.Errorf("initializing the child: %w", err)
	}
	if err := p.write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
		return nil, err
	}
	return result, nil
}

// exchange writes the gateway's own request req, of id, to a new run of
// the child and returns the result of its answer, within the init
// timeout: a child that never answers is lost. Lines before the answer
// (a log line, a notification) are skipped; an error answer is an
// *answerError.
func (c *Child) exchange(ctx context.Context, p *process, id, req string) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.InitTimeout)
	defer cancel()
	stop := context.AfterFunc(ctx, p.kill)
	defer stop()
	if err := p.write([]byte(req)); err != nil {
		return nil, err
	}
	for {
		line, err := p.stdout.next()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, err
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *answerError    `json:"error"`
		}
		if json.Unmarshal(line, &m) != nil || string(m.ID) != id {
			continue
		}
		if m.Error != nil {
			return nil, m.Error
		}
		if len(m.Result) == 0 {
			return nil, errors.New("an answer without a result")
		}
		return append(json.RawMessage(nil), m.Result...), nil
	}
}

// answerError is the error a child answered the gateway's own request
// with.
type answerError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *answerError) Error() string { return fmt.Sprintf("error %d: %s", e.Code, e.Message) }

// Ready waits until the child is running and initialized, or ctx ends.
func (c *Child) Ready(ctx context.Context) error {
	for {
		c.mu.Lock()
		up := c.proc != nil
		c.mu.Unlock()
		if up {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ErrNotReady, ctx.Err())
		case <-c.done:
			return ErrNotReady
		case <-time.After(20 * time.Millisecond):
		}
	}
}

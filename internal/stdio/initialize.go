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
	ctx, cancel := context.WithTimeout(ctx, c.opts.InitTimeout)
	defer cancel()
	stop := context.AfterFunc(ctx, p.kill) // a child that never answers is lost
	defer stop()
	req := `{"jsonrpc":"2.0","id":` + initID + `,"method":"initialize","params":{"protocolVersion":"` + ProtocolVersion +
		`","capabilities":` + clientCapabilities + `,"clientInfo":{"name":"mcpfleet","version":"1"}}}`
	if err := p.write([]byte(req)); err != nil {
		return nil, err
	}
	for {
		line, err := p.stdout.next()
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("initializing the child: %w", ctx.Err())
			}
			return nil, fmt.Errorf("initializing the child: %w", err)
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(line, &m) != nil || string(m.ID) != initID {
			continue // a log line, or a notification before the answer
		}
		if m.Error != nil {
			return nil, fmt.Errorf("initializing the child: error %d: %s", m.Error.Code, m.Error.Message)
		}
		if len(m.Result) == 0 {
			return nil, errors.New("initializing the child: an answer without a result")
		}
		if err := p.write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
			return nil, err
		}
		return append(json.RawMessage(nil), m.Result...), nil
	}
}

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

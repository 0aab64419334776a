package testserver

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// addPrompts registers the test prompt on the MCP server.
func (s *Server) addPrompts() {
	s.mcp.AddPrompt(&mcp.Prompt{
		Name:        "greet",
		Description: "Asks to greet name (default world) on behalf of the replica.",
		Arguments:   []*mcp.PromptArgument{{Name: "name", Description: "who to greet; default world"}},
	}, s.greet)
}

// greet answers the greet prompt: a request to greet its name argument,
// or world without one.
func (s *Server) greet(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	name := "world"
	if req.Params != nil && req.Params.Arguments["name"] != "" {
		name = req.Params.Arguments["name"]
	}
	return &mcp.GetPromptResult{
		Description: "greeting from " + s.name,
		Messages: []*mcp.PromptMessage{{
			Role:    "user",
			Content: &mcp.TextContent{Text: fmt.Sprintf("Greet %s on behalf of %s.", name, s.name)},
		}},
	}, nil
}

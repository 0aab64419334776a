package testserver

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestBurnRejectsBadMS checks burn's bounds on ms.
func TestBurnRejectsBadMS(t *testing.T) {
	_, base := startServer(t, "replica-b", EraBoth)
	cs := connect(t, t.Context(), base, modernVersion, nil)
	for _, ms := range []any{0, -1, 10001, "ten"} {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "burn", Arguments: map[string]any{"ms": ms}})
		if err == nil && !res.IsError {
			t.Errorf("burn ms %v succeeded: %s", ms, contentText(t, res))
		}
	}
}

// TestBurnReturns checks that a burn call returns the replica's name and
// the work done, in both eras.
func TestBurnReturns(t *testing.T) {
	for _, version := range []string{legacyVersion, modernVersion} {
		t.Run(version, func(t *testing.T) {
			_, base := startServer(t, "replica-b", EraBoth)
			cs := connect(t, t.Context(), base, version, nil)
			got := callText(t, t.Context(), cs, "burn", map[string]any{"ms": 20.5})
			if !strings.HasPrefix(got, "burned ") || !strings.Contains(got, " of "+cpuClockKind+" on replica-b: ") ||
				!strings.Contains(got, "rounds of SHA-256") {
				t.Errorf("burn = %q", got)
			}
		})
	}
}

// TestBurnCancelled cancels a long burn: it stops, and leaves its slot.
func TestBurnCancelled(t *testing.T) {
	s, base := startWith(t, "replica-b", &Options{Slots: 1})
	cs := connect(t, t.Context(), base, modernVersion, nil)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "burn", Arguments: map[string]any{"ms": 10000}})
		done <- err
	}()
	waitLoad(t, s, 1, 0)
	cancel()
	if err := <-done; err == nil {
		t.Error("cancelled burn succeeded")
	}
	waitLoad(t, s, 0, 0) // well before its 10 s of CPU
}

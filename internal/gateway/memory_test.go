package gateway

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestMemoryLevelOf(t *testing.T) {
	tests := []struct {
		used uint64
		was  MemoryLevel
		want MemoryLevel
	}{
		{0, MemoryOK, MemoryOK},
		{69, MemoryOK, MemoryOK},
		{70, MemoryOK, MemoryShedKeeping},
		{84, MemoryOK, MemoryShedKeeping},
		{85, MemoryOK, MemoryRefuseNew},
		{200, MemoryOK, MemoryRefuseNew},
		// Leaving a level takes the margin under where it begins.
		{81, MemoryRefuseNew, MemoryRefuseNew},
		{80, MemoryRefuseNew, MemoryShedKeeping},
		{66, MemoryRefuseNew, MemoryShedKeeping},
		{65, MemoryRefuseNew, MemoryOK},
		{66, MemoryShedKeeping, MemoryShedKeeping},
		{65, MemoryShedKeeping, MemoryOK},
		{90, MemoryShedKeeping, MemoryRefuseNew},
	}
	for _, tt := range tests {
		if got := memoryLevelOf(tt.used, 100, tt.was); got != tt.want {
			t.Errorf("used %d of 100 from %s: %s, want %s", tt.used, tt.was, got, tt.want)
		}
	}
	if got := memoryLevelOf(1<<40, 0, MemoryRefuseNew); got != MemoryOK {
		t.Errorf("no budget: %s", got)
	}
}

// TestMemoryBudgetSheds: at its memory budget the gateway refuses new
// calls, sessions and streams with 503 and Retry-After, lets
// notifications through, and keeps every call in flight to its end; near
// it, a legacy stream whose client reads is no longer kept; under it
// again, everything is served.
func TestMemoryBudgetSheds(t *testing.T) {
	var used atomic.Uint64
	used.Store(10)
	f := startFleet(t, 2, &Options{MemoryLimit: 100, MemoryUsed: used.Load})
	set := func(n uint64, want MemoryLevel) {
		t.Helper()
		used.Store(n)
		for deadline := time.Now().Add(5 * time.Second); f.gw.mem.Level() != want; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("used %d of 100: level %s, want %s", n, f.gw.mem.Level(), want)
			}
		}
	}
	ctx := context.Background()
	stateless := newRaw(t, f.url(), "2026-07-28")

	// A call in flight when the budget is reached runs to its end.
	inFlight := make(chan *http.Response, 1)
	go func() {
		inFlight <- stateless.post(ctx, 1, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"seconds": 0.5}}, nil)
	}()
	running := func() int {
		n := 0
		for _, s := range f.servers {
			r, _ := s.Load()
			n += r
		}
		return n
	}
	for deadline := time.Now().Add(5 * time.Second); running() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the sleep call never reached a replica")
		}
	}
	set(90, MemoryRefuseNew)

	refused := func(what string, resp *http.Response) {
		t.Helper()
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" || !strings.Contains(string(b), "memory budget") {
			t.Errorf("%s at the budget: %d, Retry-After %q, %s; want 503 and Retry-After 1", what, resp.StatusCode, resp.Header.Get("Retry-After"), b)
		}
	}
	refused("a 2026-07-28 call", stateless.post(ctx, 2, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}}, nil))
	legacy := newRaw(t, f.url(), "2025-11-25")
	refused("an initialize", legacy.post(ctx, 3, "initialize", map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "raw", "version": "1"}}, nil))
	req, _ := http.NewRequest(http.MethodGet, f.url(), nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	get, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	refused("a GET stream", get)
	if resp := stateless.post(ctx, 0, "notifications/cancelled", map[string]any{"requestId": 99}, nil); resp.StatusCode == http.StatusServiceUnavailable {
		t.Errorf("a notification at the budget: %d, want it through", resp.StatusCode)
	} else {
		resp.Body.Close()
	}
	resp := <-inFlight
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"result"`) {
		t.Fatalf("the call in flight when the budget was reached: %d %s", resp.StatusCode, b)
	}
	if n := metricValue(t, f.gw, "mcpfleet_memory_shed_total", "refused"); n != 3 {
		t.Errorf("refusals counted: %v, want 3", n)
	}

	// Near the budget a legacy stream is relayed but not kept.
	set(75, MemoryShedKeeping)
	legacy.initialize()
	resp = legacy.post(ctx, 4, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"seconds": 0.2, "progress_every": 0.05},
		"_meta": map[string]any{"progressToken": "p"}}, nil)
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "notifications/progress") || !strings.Contains(string(b), `"result"`) {
		t.Fatalf("a legacy call near the budget: %d %s", resp.StatusCode, b)
	}
	if n := metricValue(t, f.gw, "mcpfleet_memory_shed_total", "unkept"); n != 1 {
		t.Errorf("streams unkept: %v, want 1", n)
	}

	// Under it again: served.
	set(10, MemoryOK)
	resp = stateless.post(ctx, 5, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}}, nil)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a call under the budget again: %d", resp.StatusCode)
	}
}

// metricValue is the value of a gateway counter's sample whose label
// values include value.
func metricValue(t *testing.T, g *Gateway, name, value string) float64 {
	t.Helper()
	fams, err := g.metrics.root.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetValue() == value {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

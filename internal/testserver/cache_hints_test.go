package testserver

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hints are the SEP-2549 cache hints of one result.
type hints struct {
	TTLMs any // a JSON number, or nil when absent
	Scope any // a JSON string, or nil when absent
}

// TestCacheHintsOnTheWire checks, in raw 2026-07-28 exchanges, the ttlMs and
// cacheScope of every result that carries cache hints, with and without
// [Options.CacheTTL].
func TestCacheHintsOnTheWire(t *testing.T) {
	requests := []struct {
		method    string
		params    map[string]any
		wantScope string
	}{
		{"server/discover", nil, "public"},
		{"tools/list", nil, "public"},
		{"prompts/list", nil, "public"},
		{"resources/list", nil, "public"},
		{"resources/templates/list", nil, "public"},
		{"resources/read", map[string]any{"uri": CatalogURI}, "public"},
		{"resources/read", map[string]any{"uri": "mcpfleet://item/7"}, "public"},
		{"resources/read", map[string]any{"uri": ProfileURI}, "private"},
	}
	for _, ttl := range []time.Duration{0, 1500 * time.Millisecond} {
		t.Run(fmt.Sprint("ttl ", ttl), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			_, base := startWith(t, "replica-h", &Options{CacheTTL: ttl})
			for _, r := range requests {
				res, _ := rawCall(t, ctx, base, r.method, r.params, "Bearer token-h")
				got := hints{TTLMs: res["ttlMs"], Scope: res["cacheScope"]}
				want := hints{TTLMs: float64(ttl.Milliseconds()), Scope: r.wantScope}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s %v hints (-want +got):\n%s", r.method, r.params, diff)
				}
			}
		})
	}
}

// TestCacheTTLThroughClient checks that the official SDK client of the
// 2026-07-28 era sees the hints, and so serves a repeated tools/list from
// its own cache only when the server gives a TTL.
func TestCacheTTLThroughClient(t *testing.T) {
	tests := []struct {
		name      string
		ttl       time.Duration
		wantTTLMs int
		wantLists int // tools/list requests the server handles for 3 calls
	}{
		{"no ttl", 0, 0, 3},
		{"one minute", time.Minute, 60000, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			g := &Gauge{}
			_, base := startWith(t, "replica-t", &Options{CacheTTL: tt.ttl, Calls: g})
			cs := connect(t, ctx, base, modernVersion, nil)
			for range 3 {
				res, err := cs.ListTools(ctx, nil)
				if err != nil {
					t.Fatalf("ListTools: %v", err)
				}
				want := mcp.Cacheable{TTLMs: tt.wantTTLMs, CacheScope: "public"}
				if diff := cmp.Diff(want, res.Cacheable); diff != "" {
					t.Errorf("tools/list hints (-want +got):\n%s", diff)
				}
			}
			if got := g.Method("tools/list"); got != tt.wantLists {
				t.Errorf("Method(tools/list) = %d, want %d", got, tt.wantLists)
			}
		})
	}
}

package testserver

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestGaugeCountsRequests checks that a Gauge shared by two replicas counts
// every request they handle, by method and by resources/read URI, and no
// notification.
func TestGaugeCountsRequests(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	g := &Gauge{}
	_, baseA := startWith(t, "replica-a", &Options{Calls: g})
	_, baseB := startWith(t, "replica-b", &Options{Calls: g})
	a := connect(t, ctx, baseA, modernVersion, nil)
	b := connect(t, ctx, baseB, modernVersion, nil)
	legacy := connect(t, ctx, baseA, legacyVersion, nil)
	steps := []struct {
		cs  *mcp.ClientSession
		do  string // "list", "call" or a URI to read
		arg string
	}{
		{a, "list", ""}, {a, "list", ""}, {b, "list", ""}, {legacy, "list", ""},
		{a, "read", CatalogURI}, {a, "read", CatalogURI}, {b, "read", ProfileURI},
		{legacy, "read", "mcpfleet://item/5"},
		{b, "call", "lookup"},
	}
	for _, st := range steps {
		var err error
		switch st.do {
		case "list":
			_, err = st.cs.ListTools(ctx, nil)
		case "read":
			_, err = st.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: st.arg})
		case "call":
			callText(t, ctx, st.cs, st.arg, map[string]any{"key": "k"})
		}
		if err != nil {
			t.Fatalf("%s %s: %v", st.do, st.arg, err)
		}
	}
	methods := []string{"server/discover", "initialize", "notifications/initialized", "tools/list", "resources/read", "tools/call", "prompts/list"}
	uris := []string{CatalogURI, ProfileURI, "mcpfleet://item/5", ItemTemplate}
	got, want := map[string]int{}, map[string]int{
		"server/discover": 2, "initialize": 1, "notifications/initialized": 0,
		"tools/list": 4, "resources/read": 4, "tools/call": 1, "prompts/list": 0,
		"read " + CatalogURI: 2, "read " + ProfileURI: 1, "read mcpfleet://item/5": 1, "read " + ItemTemplate: 0,
		"started lookup": 1,
	}
	for _, m := range methods {
		got[m] = g.Method(m)
	}
	for _, u := range uris {
		got["read "+u] = g.Read(u)
	}
	got["started lookup"] = g.Started("lookup")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
}

// TestGaugeConcurrentCallers checks that one Gauge counts concurrent
// requests over a fleet exactly: 12 callers' tools/list over 3 replicas are
// 12 executions.
func TestGaugeConcurrentCallers(t *testing.T) {
	const callers = 12
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	g := &Gauge{}
	var bases []string
	for _, name := range []string{"replica-x", "replica-y", "replica-z"} {
		_, base := startWith(t, name, &Options{Calls: g})
		bases = append(bases, base)
	}
	sessions := make([]*mcp.ClientSession, callers)
	for i := range sessions {
		sessions[i] = connect(t, ctx, bases[i%len(bases)], modernVersion, nil)
	}
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for _, cs := range sessions {
		wg.Go(func() {
			if _, err := cs.ListTools(ctx, nil); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("ListTools: %v", err)
	}
	if got := g.Method("tools/list"); got != callers {
		t.Errorf("Method(tools/list) = %d, want %d", got, callers)
	}
	if got := g.Method("server/discover"); got != callers {
		t.Errorf("Method(server/discover) = %d, want %d", got, callers)
	}
}

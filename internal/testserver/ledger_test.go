package testserver

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestLedgerRecordsMutations: two replicas sharing one ledger record every
// mutation with key and replica, and the ledger reads back.
func TestLedgerRecordsMutations(t *testing.T) {
	var ledger ledgerBuffer
	for _, name := range []string{"a", "b"} {
		s, err := New(name, &Options{Ledger: &ledger})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(s.Handler())
		defer hs.Close()
		c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: hs.URL + "/mcp"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"k 1", `k"2`} {
			if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "mutate", Arguments: map[string]any{"key": key, "seconds": 0, "at": 0}}); err != nil {
				t.Fatal(err)
			}
		}
		cs.Close()
	}
	entries, err := ReadLedger(strings.NewReader(ledger.String()))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, e := range entries {
		got[e.Key+"@"+e.Replica]++
	}
	for _, want := range []string{"k 1@a", `k"2@a`, "k 1@b", `k"2@b`} {
		if got[want] != 1 {
			t.Errorf("ledger has %d of %s; all: %v", got[want], want, got)
		}
	}
	if _, err := ReadLedger(strings.NewReader(`"k" "a" 2026` + "\n" + `"torn`)); err == nil {
		t.Error("a torn line was accepted")
	}
}

type ledgerBuffer struct{ b bytes.Buffer }

func (w *ledgerBuffer) Write(p []byte) (int, error) { return w.b.Write(p) }
func (w *ledgerBuffer) String() string              { return w.b.String() }

// TestSharedLedgerAppliesEachOpOnce: replicas sharing a ledger file apply a
// mutation carrying an idempotency key once across the fleet, even after a
// restart; mutations without a key all apply.
func TestSharedLedgerAppliesEachOpOnce(t *testing.T) {
	path := t.TempDir() + "/ledger"
	call := func(name, op string) string {
		l, err := OpenLedger(path)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		s, err := New(name, &Options{Ledger: l})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(s.Handler())
		defer hs.Close()
		c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: hs.URL + "/mcp"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		p := &mcp.CallToolParams{Name: "mutate", Arguments: map[string]any{"key": "k", "seconds": 0, "at": 0}}
		if op != "" {
			p.Meta = mcp.Meta{"io.mcpfleet/idempotency-key": op}
		}
		res, err := cs.CallTool(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		return res.Content[0].(*mcp.TextContent).Text
	}
	first := call("a", "op-1")
	again := call("b", "op-1") // another replica (or a restart) re-executes op-1
	call("a", "")
	call("b", "")
	if !strings.HasPrefix(first, "mutated") || !strings.HasPrefix(again, "already mutated") {
		t.Errorf("first %q, re-execution %q", first, again)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entries, err := ReadLedger(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 {
		t.Errorf("ledger has %d mutations, want 3 (op-1 once, two without a key): %+v", len(entries), entries)
	}
}

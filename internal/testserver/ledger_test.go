package testserver

import (
	"bytes"
	"context"
	"net/http/httptest"
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

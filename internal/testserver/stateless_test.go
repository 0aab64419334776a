package testserver

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// roundRobin is an http.RoundTripper that sends each request to the next of
// its bases in turn, as a balancer without affinity does.
type roundRobin struct {
	bases []string     // http://host:port of each replica
	next  atomic.Int64 // requests sent
}

// RoundTrip sends a copy of r to the next replica.
func (rr *roundRobin) RoundTrip(r *http.Request) (*http.Response, error) {
	base := rr.bases[int(rr.next.Add(1)-1)%len(rr.bases)]
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host = "http", base[len("http://"):]
	r.Host = ""
	return http.DefaultTransport.RoundTrip(r)
}

// TestStatelessAnyReplicaAnswers connects a 2025-11-25 client through a
// balancer without affinity to two stateless replicas: initialize mints no
// session, every request is answered wherever it lands, and the SDK client
// takes the GET stream's 405 as "no stream".
func TestStatelessAnyReplicaAnswers(t *testing.T) {
	for _, era := range []string{EraBoth, Era2025} {
		t.Run(era, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			_, a := startWith(t, "replica-a", &Options{Era: era, Stateless: true})
			_, b := startWith(t, "replica-b", &Options{Era: era, Stateless: true})
			rr := &roundRobin{bases: []string{a, b}}
			cs, err := dial(ctx, a, legacyVersion, nil, &http.Client{Transport: rr})
			if err != nil {
				t.Fatalf("Connect: %v", err)
			}
			defer cs.Close()
			if got := cs.InitializeResult().ProtocolVersion; got != legacyVersion {
				t.Errorf("negotiated %q, want %q", got, legacyVersion)
			}
			if cs.ID() != "" {
				t.Errorf("session %q minted, want none", cs.ID())
			}
			seen := map[string]bool{}
			for range 4 {
				seen[callText(t, ctx, cs, "whoami", nil)] = true
			}
			if diff := cmp.Diff(map[string]bool{"replica-a": true, "replica-b": true}, seen); diff != "" {
				t.Errorf("replicas that answered (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStatelessIgnoresSessionID sends a tools/call naming a session that no
// replica minted: the stateless handler ignores the header and answers, and
// answers GET with 405.
func TestStatelessIgnoresSessionID(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, base := startWith(t, "replica-x", &Options{Stateless: true})
	resp := legacyPost(t, ctx, base, "made-up-session", map[string]any{
		"jsonrpc": "2.0", "id": 7, "method": "tools/call",
		"params": map[string]any{"name": "whoami", "arguments": map[string]any{}},
	})
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get(headerSessionID) != "" {
		t.Errorf("status %d, session %q; want 200 and none", resp.StatusCode, resp.Header.Get(headerSessionID))
	}
	rpcResult(t, "tools/call", raw)
	if got := get(t, http.MethodGet, base+"/mcp").Status; got != http.StatusMethodNotAllowed {
		t.Errorf("GET /mcp = %d, want 405", got)
	}
}

// TestStatelessEras connects modern clients to stateless replicas: era both
// serves them stateless as ever, era 2025 makes them fall back to
// initialize, with no session either way.
func TestStatelessEras(t *testing.T) {
	tests := []struct {
		era, want string
	}{
		{EraBoth, modernVersion},
		{Era2025, legacyVersion},
		{Era2026, modernVersion},
	}
	for _, tt := range tests {
		t.Run(tt.era, func(t *testing.T) {
			t.Parallel()
			_, base := startWith(t, "replica-m", &Options{Era: tt.era, Stateless: true})
			cs := connect(t, t.Context(), base, modernVersion, nil)
			if got := cs.InitializeResult().ProtocolVersion; got != tt.want || cs.ID() != "" {
				t.Errorf("negotiated %q with session %q, want %q and none", got, cs.ID(), tt.want)
			}
			if got := callText(t, t.Context(), cs, "whoami", nil); got != "replica-m" {
				t.Errorf("whoami = %q", got)
			}
		})
	}
}

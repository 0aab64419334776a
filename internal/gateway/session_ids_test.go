package gateway

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestGarbageSessionIDsAreAnsweredByTheGateway: 2,000 requests with
// garbage, truncated, bit-flipped, oversized, non-ASCII and empty session
// IDs are answered by the gateway, none 2xx or 5xx, and a real session
// still works afterwards.
func TestGarbageSessionIDsAreAnsweredByTheGateway(t *testing.T) {
	f := startFleet(t, 3, nil)
	real := newRaw(t, f.url(), "2025-11-25")
	real.initialize()
	sealed := real.session
	rng := mrand.New(mrand.NewPCG(1, 2))
	flip := func(s string) string {
		b := []byte(s)
		i := rng.IntN(len(b))
		b[i] ^= byte(1 << rng.IntN(8))
		return string(b)
	}
	raw := make([]byte, 60)
	kinds := []func(int) string{
		func(int) string { return "" },
		func(int) string { rand.Read(raw); return base64.RawURLEncoding.EncodeToString(raw) },
		func(int) string { return sealed[:rng.IntN(len(sealed))] },
		func(int) string { return flip(sealed) },
		func(int) string { return sealed + strings.Repeat("A", 1+rng.IntN(4000)) },
		func(int) string { return "séance-" + sealed[5:] },
		func(int) string { return strings.Repeat("x", 1+rng.IntN(100)) },
		func(int) string { return sealed[:len(sealed)-1] + string("ABCDEFGH"[rng.IntN(8)]) },
	}
	methods := []string{http.MethodPost, http.MethodGet, http.MethodDelete}
	counts := map[int]int{}
	for i := range 2000 {
		id := kinds[i%len(kinds)](i)
		if id == sealed {
			continue
		}
		method := methods[i%len(methods)]
		status := rawStatus(t, f.front.URL, method, id)
		counts[status]++
		if status < 400 || status >= 500 {
			t.Fatalf("request %d (%s, session %.40q): status %d, want 4xx from the gateway", i, method, id, status)
		}
	}
	t.Logf("statuses: %v", counts)
	// Two headers are one too many.
	req, _ := http.NewRequest(http.MethodPost, f.url(), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header["Mcp-Session-Id"] = []string{sealed, sealed}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("two session headers: %d, want 400", resp.StatusCode)
	}
	resp = real.post(context.Background(), 2, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}}, nil)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "replica-") {
		t.Fatalf("the real session afterwards: %d %s", resp.StatusCode, b)
	}
}

// rawStatus sends one request with the session header's bytes as they are
// (a client library would refuse some) and returns the answer's status.
func rawStatus(t *testing.T, base, method, session string) int {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	body := ""
	if method == http.MethodPost {
		body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`
	}
	fmt.Fprintf(c, "%s /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
		"Mcp-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", method, session, len(body), body)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the answer to %s with session %.40q: %v", method, session, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

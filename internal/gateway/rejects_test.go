package gateway

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestGatewayRejects(t *testing.T) {
	f := startFleet(t, 2, &Options{MaxBodyBytes: 4 << 20})
	t.Run("unknown session is 404 -32001", func(t *testing.T) {
		r := newRaw(t, f.url(), "2025-11-25")
		r.session = "no-such-session"
		resp := r.post(context.Background(), 9, "tools/list", nil, nil)
		code, _ := rpcError(t, resp)
		if resp.StatusCode != 404 || code != -32001 {
			t.Errorf("got %d %d, want 404 -32001", resp.StatusCode, code)
		}
	})
	t.Run("large body is 413", func(t *testing.T) {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("x", 5<<20) + `"}}}`
		resp, err := http.Post(f.url(), "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		code, _ := rpcError(t, resp)
		if resp.StatusCode != 413 || code != -32600 {
			t.Errorf("got %d %d, want 413 -32600", resp.StatusCode, code)
		}
	})
	t.Run("large chunked body is 413", func(t *testing.T) {
		body := io.MultiReader(strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"x","params":"`), bytes.NewReader(bytes.Repeat([]byte("y"), 5<<20)))
		req, _ := http.NewRequest(http.MethodPost, f.url(), body) // unknown length: chunked
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if code, _ := rpcError(t, resp); resp.StatusCode != 413 || code != -32600 {
			t.Errorf("got %d %d, want 413 -32600", resp.StatusCode, code)
		}
	})
	t.Run("header mismatch is 400 -32020", func(t *testing.T) {
		r := newRaw(t, f.url(), "2026-07-28")
		resp := r.post(context.Background(), 4, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}}, map[string]string{"Mcp-Name": "echo"})
		code, _ := rpcError(t, resp)
		if resp.StatusCode != 400 || code != -32020 {
			t.Errorf("got %d %d, want 400 -32020", resp.StatusCode, code)
		}
		resp = r.post(context.Background(), 5, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}}, map[string]string{"Mcp-Method": "tools/list"})
		if code, _ := rpcError(t, resp); resp.StatusCode != 400 || code != -32020 {
			t.Errorf("method mismatch: got %d %d, want 400 -32020", resp.StatusCode, code)
		}
	})
	t.Run("a member named twice is 400 -32600, saying so", func(t *testing.T) {
		for name, body := range map[string]string{
			"message": `{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call","params":{"name":"echo"}}`,
			"params":  `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","name":"secret-tool"}}`,
			"batch":   `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"id":3,"method":"ping"}]`,
		} {
			resp, err := http.Post(f.url(), "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			code, msg := rpcError(t, resp)
			if resp.StatusCode != 400 || code != -32600 || msg != errTwice.Message {
				t.Errorf("%s: got %d %d %q, want 400 -32600 %q", name, resp.StatusCode, code, msg, errTwice.Message)
			}
			if strings.Contains(msg, "secret") || strings.Contains(msg, `"name"`) {
				t.Errorf("%s: the answer repeats the body: %q", name, msg)
			}
		}
	})
	t.Run("bad json is 400 -32700", func(t *testing.T) {
		resp, err := http.Post(f.url(), "application/json", strings.NewReader(`{"jsonrpc":`))
		if err != nil {
			t.Fatal(err)
		}
		if code, _ := rpcError(t, resp); resp.StatusCode != 400 || code != -32700 {
			t.Errorf("got %d %d, want 400 -32700", resp.StatusCode, code)
		}
	})
	t.Run("other methods are 405", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPut, f.url(), nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 405 || resp.Header.Get("Allow") == "" {
			t.Errorf("got %d Allow=%q, want 405 with Allow", resp.StatusCode, resp.Header.Get("Allow"))
		}
	})
	t.Run("a made-up method is one series", func(t *testing.T) {
		for _, m := range []string{"FOO1", "FOO2", "BREW"} {
			req, _ := http.NewRequest(m, f.url(), nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 405 {
				t.Errorf("%s: got %d, want 405", m, resp.StatusCode)
			}
		}
		other := testutil.ToFloat64(f.gw.metrics.requests.WithLabelValues("other", "unknown", "none", "rejected"))
		if other != 3 {
			t.Errorf("requests{method=other} = %v, want 3 (made-up methods must not make series of their own)", other)
		}
	})
	t.Run("healthz and readyz", func(t *testing.T) {
		for _, p := range []string{"/healthz", "/readyz"} {
			resp, err := http.Get(f.front.URL + p)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("%s = %d", p, resp.StatusCode)
			}
		}
		f.gw.SetDraining()
		for p, want := range map[string]int{"/healthz": 200, "/readyz": 503} {
			resp, err := http.Get(f.front.URL + p)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != want || !strings.Contains(string(b), "draining") || resp.Header.Get("Cache-Control") != "no-store" {
				t.Errorf("draining %s = %d %q, want %d draining", p, resp.StatusCode, b, want)
			}
		}
	})
}

// TestDNSRebindingProtection: on a loopback listener a foreign Host is
// refused, loopback names pass, and AllowAnyHost turns the check off.
func TestDNSRebindingProtection(t *testing.T) {
	for _, allow := range []bool{false, true} {
		f := startFleet(t, 1, &Options{AllowAnyHost: allow})
		for host, wantOK := range map[string]bool{"evil.example.com": allow, "localhost:80": true, "127.0.0.1": true, "[::1]:8080": true} {
			req, _ := http.NewRequest(http.MethodPost, f.url(), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
			req.Host = host
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if got := resp.StatusCode != http.StatusForbidden; got != wantOK {
				t.Errorf("allow_any_host=%v Host %s: status %d", allow, host, resp.StatusCode)
			}
		}
	}
}

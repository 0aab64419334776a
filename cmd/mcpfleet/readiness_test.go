package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/store/redistest"
	"github.com/mcpfleet/mcpfleet/internal/testproc"
)

// probeStatus answers a GET of u: its status and body.
func probeStatus(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitStatus polls u until it answers code with a body containing want.
func waitStatus(t *testing.T, u string, code int, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, b := probeStatus(t, u)
		if c == code && strings.Contains(b, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s = %d %q, want %d %q", u, c, b, code, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestReadinessAndLiveness runs serve with a shared store behind a proxy
// that can be cut: /readyz follows the store (unless readyz_checks_store
// is off) while /healthz stays 200; on shutdown /readyz turns 503 draining
// at once and /healthz stays 200 draining while the listener still serves
// for drain_delay.
func TestReadinessAndLiveness(t *testing.T) {
	if testing.Short() {
		t.Skip("starts serve and a redis-server")
	}
	redis := redistest.Start(t)
	backend := testproc.FreeAddr(t)
	bctx, stopBackend := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stopBackend()
	wg.Go(func() {
		run(bctx, []string{"testserver", "--listen", backend, "--name", "a"}, &lockedBuffer{}, &lockedBuffer{})
	})
	testproc.WaitReady(t, "http://"+backend+"/health")
	for _, checks := range []bool{true, false} {
		t.Run(fmt.Sprintf("readyz_checks_store=%v", checks), func(t *testing.T) {
			proxy := testproc.NewFlakyProxy(t, redis)
			addr := testproc.FreeAddr(t)
			cfg := filepath.Join(t.TempDir(), "mcpfleet.yaml")
			os.WriteFile(cfg, fmt.Appendf(nil, "listen: %s\nupstreams: [{url: 'http://%s/mcp'}]\nidempotency: redis\nredis_url: redis://%s\nsecret_file: %s\ndrain_delay: 2s\ngrace: 1s\nreadyz_checks_store: %v\n",
				addr, backend, proxy.Addr(), writeSecret(t), checks), 0o600)
			ctx, stop := context.WithCancel(context.Background())
			var errb lockedBuffer
			served := make(chan int)
			go func() { served <- run(ctx, []string{"serve", "--config", cfg}, &lockedBuffer{}, &errb) }()
			defer func() {
				stop()
				if code := <-served; code != 0 {
					t.Errorf("serve exit %d: %s", code, errb.String())
				}
			}()
			base := "http://" + addr
			testproc.WaitReady(t, base+"/readyz")

			proxy.Cut()
			if checks {
				waitStatus(t, base+"/readyz", 503, "store")
			} else {
				time.Sleep(1100 * time.Millisecond) // past one store-check period
				waitStatus(t, base+"/readyz", 200, "ready")
			}
			waitStatus(t, base+"/healthz", 200, "ok")
			proxy.Restore()
			waitStatus(t, base+"/readyz", 200, "ready")

			stop()
			waitStatus(t, base+"/readyz", 503, "draining")
			waitStatus(t, base+"/healthz", 200, "draining")
			// Still serving for drain_delay: an MCP request is answered.
			resp, err := http.DefaultClient.Do(whoamiRequest(base + "/mcp"))
			if err != nil {
				t.Fatalf("MCP request while draining: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("MCP request while draining: %d", resp.StatusCode)
			}
		})
	}
}

// whoamiRequest is a 2026-07-28 tools/call of whoami to the MCP endpoint u.
func whoamiRequest(u string) *http.Request {
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "whoami"} {
		req.Header.Set(k, v)
	}
	return req
}

// TestReadyzWithEveryReplicaDead runs serve in front of two dead replicas,
// one that refuses connections and one that accepts them and never
// answers: from the first answer /readyz is 503, starting while the first
// checks are out, then not ready, and never 200.
func TestReadyzWithEveryReplicaDead(t *testing.T) {
	if testing.Short() {
		t.Skip("starts serve")
	}
	silent := silentListener(t)
	addr := testproc.FreeAddr(t)
	cfg := filepath.Join(t.TempDir(), "mcpfleet.yaml")
	os.WriteFile(cfg, fmt.Appendf(nil, "listen: %s\nsecret_file: %s\nhealth_check: {interval: 600ms, timeout: 400ms}\nupstreams: [{name: refused, url: 'http://%s/mcp'}, {name: silent, url: 'http://%s/mcp'}]\n",
		addr, writeSecret(t), testproc.FreeAddr(t), silent.Addr()), 0o600)
	ctx, stop := context.WithCancel(context.Background())
	var errb lockedBuffer
	served := make(chan int)
	go func() { served <- run(ctx, []string{"serve", "--config", cfg}, &lockedBuffer{}, &errb) }()
	defer func() {
		stop()
		if code := <-served; code != 0 {
			t.Errorf("serve exit %d: %s", code, errb.String())
		}
	}()
	client := &http.Client{Timeout: 2 * time.Second}
	seen := map[string]bool{}
	start := time.Now()
	for time.Since(start) < 2500*time.Millisecond {
		resp, err := client.Get("http://" + addr + "/readyz")
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" && len(seen) == 0 {
			time.Sleep(2 * time.Millisecond) // not listening yet
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body := strings.TrimSpace(string(b))
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("/readyz = %d %s at %v with every replica dead", resp.StatusCode, body, time.Since(start))
		}
		if len(seen) == 0 && body != `{"status":"starting"}` {
			t.Errorf("the first /readyz answer is %s, want starting", body)
		}
		seen[body] = true
		time.Sleep(10 * time.Millisecond)
	}
	if !seen[`{"status":"not ready","reason":"no replica can take new work"}`] {
		t.Errorf("/readyz never said not ready; answers: %v", seen)
	}
}

// silentListener accepts connections and never answers on them, until the
// test ends.
func silentListener(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex // guards held
	var held []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	return ln
}

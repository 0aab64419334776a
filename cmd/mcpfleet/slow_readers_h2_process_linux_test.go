package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testproc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSlowReadersMemoryH2 is TestSlowReadersMemory over HTTP/2 with TLS:
// 200 clients, each on its own connection, open SSE streams on a chatty
// tool and never read them (half 2026-07-28 calls, half 2025-11-25
// sessions). Their HTTP/2 stack takes what its stream window allows (64
// KiB) and then grants no more, so the gateway's next write waits,
// write_timeout passes, and the stream is reset (RST_STREAM) while its
// connection lives on. It asserts what must hold on any machine: the
// gateway stays up, a reading client over HTTP/2 is served throughout, and
// every non-reader's stream is reset (read at the end, each gives what its
// window held and then the reset, where a stream still relayed would go on
// for its call's minute); the RSS and the kernel send queue are logged
// (docs/BENCHMARKS.md has a 60 s run:
// MCPFLEET_SLOW_READERS_SECONDS=60 go test -run TestSlowReadersMemoryH2 -v ./cmd/mcpfleet).
// Without the variable only the budget's setup runs, for 6 s.
func TestSlowReadersMemoryH2(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	if raceEnabled {
		t.Skip("measures a gateway process: run without -race (scripts/test.sh has a step for it)")
	}
	secs, setups := slowReaderSetups(t)
	cert := newTestCert(t, 1)
	dir := t.TempDir()
	certPath, keyPath := dir+"/cert.pem", dir+"/key.pem"
	writeFiles(t, certPath, cert.certPEM, keyPath, cert.keyPEM)
	ups := slowReaderReplicas(t)
	// h2Client is a client of its own connection, HTTP/2 only, whose
	// streams take at most 64 KiB unread.
	h2Client := func() *http.Client {
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool(cert)}, Protocols: new(http.Protocols),
			HTTP2: &http.HTTP2Config{MaxReceiveBufferPerStream: 64 << 10}}
		tr.Protocols.SetHTTP2(true)
		t.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Transport: tr}
	}
	for _, setup := range setups {
		t.Run(setup.name, func(t *testing.T) {
			gw := testproc.FreeAddr(t)
			cfg := "listen: " + gw + "\nwrite_timeout: 1s\nkeepalive: 200ms\ngrace: 1s\n" + setup.cfg +
				"tls: {cert_file: " + certPath + ", key_file: " + keyPath + "}\nupstreams:\n" + ups
			path := t.TempDir() + "/gw.yaml"
			if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := startServeCmd(t, path)
			base := "https://" + gw + "/mcp"
			waitReadyTLS(t, h2Client(), "https://"+gw+"/readyz")
			rss0 := rssOf(t, cmd.pid)

			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(secs+60)*time.Second)
			defer cancel()
			var bodies []io.ReadCloser
			defer func() {
				for _, b := range bodies {
					b.Close()
				}
			}()
			for i := range 200 {
				c := h2Client()
				version, session := "2026-07-28", ""
				if i%2 == 1 {
					version, session = "2025-11-25", initializeOver(t, c, base)
				}
				resp := postChatty(t, ctx, c, base, version, session, i+2)
				if resp.ProtoMajor != 2 {
					t.Fatalf("a non-reader's answer over %s, want HTTP/2", resp.Proto)
				}
				bodies = append(bodies, resp.Body)
			}
			mc := mcp.NewClient(&mcp.Implementation{Name: "reader", Version: "1"}, nil)
			cs, err := mc.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base, HTTPClient: h2Client()},
				&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			_, port, _ := net.SplitHostPort(gw)
			var peakRSS, peakQ int64
			served, start := 0, time.Now()
			for time.Since(start) < time.Duration(secs)*time.Second {
				select {
				case <-cmd.exited:
					t.Fatal("the gateway exited")
				default:
				}
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
				if err != nil || res.IsError {
					t.Fatalf("the reading client after %v: %v %v", time.Since(start).Round(time.Second), res, err)
				}
				served++
				peakRSS, peakQ = max(peakRSS, rssOf(t, cmd.pid)), max(peakQ, sendQueue(t, port))
				time.Sleep(time.Second)
			}
			// Each non-reader's window filled within a few seconds of
			// progress, and write_timeout (1 s) later its stream was
			// reset: read now, it ends at once, in an error.
			type outcome struct {
				n   int64
				err error
			}
			done := make(chan outcome, len(bodies))
			for _, b := range bodies {
				go func() {
					n, err := io.Copy(io.Discard, b)
					done <- outcome{n, err}
				}()
			}
			deadline := time.After(20 * time.Second)
			for i := range bodies {
				select {
				case o := <-done:
					if o.err == nil {
						t.Errorf("a non-reader's stream ended cleanly after %d bytes; want it reset", o.n)
					}
				case <-deadline:
					t.Fatalf("%d of 200 non-reading streams still bring data 20 s after the measure: not reset", len(bodies)-i)
				}
			}
			t.Logf("%s over HTTP/2, %v: RSS %.0f MiB at start, peak %.0f MiB (grew %.0f MiB); kernel send queue peak %.1f MiB; %d calls of the reading client served; every non-reader's stream reset",
				setup.name, time.Since(start).Round(time.Second), mib(rss0), mib(peakRSS), mib(peakRSS-rss0), mib(peakQ), served)
		})
	}
}

// initializeOver opens a 2025-11-25 session through c and returns its ID.
func initializeOver(t *testing.T, c *http.Client, url string) string {
	t.Helper()
	post := func(body, session string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	resp := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, "")
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d", resp.StatusCode)
	}
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, id)
	return id
}

// postChatty calls the chatty tool (2 KiB of progress every 50 ms for 60
// s) and returns the answer unread.
func postChatty(t *testing.T, ctx context.Context, c *http.Client, url, version, session string, id int) *http.Response {
	t.Helper()
	meta := `"progressToken":"p"`
	if version == "2026-07-28" {
		meta += `,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}`
	}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"sleep","arguments":{"seconds":60,"progress_every":0.05,"pad":2048},"_meta":{%s}}}`, id, meta)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", version)
	if version == "2026-07-28" {
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "sleep")
	} else {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the chatty call: %d", resp.StatusCode)
	}
	return resp
}

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testproc"
)

// TestTracesInJaeger: a real Jaeger (all-in-one, its OTLP receiver) takes
// the spans of a client's call through a gateway process and a testserver
// replica, and its own query API shows them as one trace: the client's
// span, the gateway's server span under it (mcp.method.name,
// gen_ai.tool.name), an attempt span under that naming the replica, and
// the replica's span under the attempt. For a 2026-07-28 call with a
// traceparent header, one with the context only in params._meta, and a
// 2025-11-25 session's call. No span holds the bearer token, the sealed
// session ID or the secret file's keys.
func TestTracesInJaeger(t *testing.T) {
	j := testproc.StartJaeger(t)
	t.Setenv("OTEL_METRICS_EXPORTER", "none") // for the gateway process: Jaeger takes traces only
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var ups strings.Builder
	for i := range 2 {
		addr := testproc.FreeAddr(t)
		startReplica(t, fmt.Sprintf("replica-%d", i+1), addr, "--otlp-endpoint", j.OTLPHTTP)
		fmt.Fprintf(&ups, "  - {name: replica-%d, url: \"http://%s/mcp\"}\n", i+1, addr)
	}
	secret := writeSecret(t)
	gws, _ := startGateways(t, 1, "secret_file: "+secret+"\ntelemetry: {otlp_endpoint: \""+j.OTLPHTTP+"\", sample_ratio: 1}\nupstreams:\n"+ups.String())
	gw := gws[0]
	const token = "tok-TRACE-9d1e4b7a"
	bearer := map[string]string{"Authorization": "Bearer " + token}

	// Each case's client span: a fresh trace whose parent the gateway must
	// continue.
	newParent := func() (traceID, spanID, traceparent string) {
		var b [24]byte
		rand.Read(b[:])
		traceID, spanID = hex.EncodeToString(b[:16]), hex.EncodeToString(b[16:])
		return traceID, spanID, "00-" + traceID + "-" + spanID + "-01"
	}
	var sealed string
	cases := []struct {
		name string
		call func(traceparent string) error
	}{
		{"2026-07-28, traceparent header", func(tp string) error {
			h := map[string]string{"Traceparent": tp}
			for k, v := range bearer {
				h[k] = v
			}
			return drain(post2026(gw, "tools/call", "whoami", `"name":"whoami","arguments":{}`, 1, h))
		}},
		{"2026-07-28, params._meta only", func(tp string) error {
			body := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami","arguments":{},"_meta":{"traceparent":"` + tp + `","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
			h := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "whoami"}
			for k, v := range bearer {
				h[k] = v
			}
			return drain(postRaw(gw, body, h))
		}},
		{"2025-11-25 session", func(tp string) error {
			h := map[string]string{"Mcp-Protocol-Version": "2025-11-25"}
			for k, v := range bearer {
				h[k] = v
			}
			resp, err := postRaw(gw, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"trace-test","version":"1"}}}`, h)
			if err != nil {
				return err
			}
			sealed = resp.Header.Get("Mcp-Session-Id")
			if err := drain(resp, nil); err != nil || sealed == "" {
				return fmt.Errorf("initialize: session %q, %v", sealed, err)
			}
			h["Mcp-Session-Id"] = sealed
			if err := drain(postRaw(gw, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, h)); err != nil {
				return err
			}
			h["Traceparent"] = tp
			return drain(postRaw(gw, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`, h))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			traceID, clientSpan, tp := newParent()
			if err := c.call(tp); err != nil {
				t.Fatal(err)
			}
			var server, attempt, replica testproc.Span
			spans, err := j.WaitForTrace(ctx, traceID, func(spans []testproc.Span) bool {
				server, attempt, replica = testproc.Span{}, testproc.Span{}, testproc.Span{}
				for _, s := range spans {
					if s.ServiceName == "mcpfleet" && s.Kind == "server" && s.ParentSpanID == clientSpan && s.Attributes["mcp.method.name"] == "tools/call" {
						server = s
					}
				}
				for _, s := range spans {
					if server.SpanID != "" && s.ServiceName == "mcpfleet" && s.Kind == "client" && s.ParentSpanID == server.SpanID && s.Attributes["mcpfleet.replica"] != "" {
						attempt = s
					}
				}
				for _, s := range spans {
					if attempt.SpanID != "" && s.ServiceName == "mcpfleet-testserver" && s.ParentSpanID == attempt.SpanID {
						replica = s
					}
				}
				return replica.SpanID != ""
			})
			if err != nil {
				t.Fatalf("the trace in Jaeger lacks client -> gateway -> attempt -> replica: %v", err)
			}
			if server.OperationName != "tools/call whoami" || server.Attributes["gen_ai.tool.name"] != "whoami" {
				t.Errorf("gateway span %q, gen_ai.tool.name %q", server.OperationName, server.Attributes["gen_ai.tool.name"])
			}
			if !strings.HasPrefix(attempt.Attributes["mcpfleet.replica"], "replica-") || replica.Attributes["mcp.method.name"] != "tools/call" {
				t.Errorf("attempt names %q; replica span %q %v", attempt.Attributes["mcpfleet.replica"], replica.OperationName, replica.Attributes)
			}
			if sealed != "" && server.Attributes["mcp.session.id"] == "" {
				t.Errorf("the session's call has no mcp.session.id")
			}
			t.Logf("%d spans; gateway %s, attempt at %s, replica %s", len(spans), server.OperationName, attempt.Attributes["mcpfleet.replica"], replica.OperationName)
		})
	}

	// What Jaeger holds of either service: no token, no sealed session
	// ID, nothing of the secret file.
	sec, err := os.ReadFile(secret)
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, svc := range []string{"mcpfleet", "mcpfleet-testserver"} {
		dump, err := j.Dump(ctx, svc)
		if err != nil {
			t.Fatal(err)
		}
		all.WriteString(dump)
	}
	if all.Len() == 0 {
		t.Fatal("Jaeger returned nothing to check")
	}
	secrets := map[string]string{"the bearer token": token}
	if sealed != "" {
		secrets["the sealed session ID"] = sealed
	}
	for _, line := range strings.Split(string(sec), "\n") {
		// Every value of the secret file: keys and salt.
		if k, v, ok := strings.Cut(line, ":"); ok {
			v = strings.Trim(strings.TrimSpace(v), `"'`)
			if len(v) >= 16 {
				secrets["the secret file's "+strings.Trim(k, " -")] = v
			}
		}
	}
	for what, s := range secrets {
		if strings.Contains(all.String(), s) {
			t.Errorf("Jaeger's traces hold %s", what)
		}
	}
}

// postRaw posts a JSON-RPC body to a gateway's MCP endpoint.
func postRaw(gw, body string, hdr map[string]string) (*http.Response, error) {
	req, _ := http.NewRequest(http.MethodPost, "http://"+gw+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return http.DefaultClient.Do(req)
}

// drain reads an answer whole, and fails a status other than 200 or 202.
func drain(resp *http.Response, err error) error {
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	return nil
}

package health

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestJudge: what each answer proves, probe by probe.
func TestJudge(t *testing.T) {
	const (
		rpcResult = `{"jsonrpc":"2.0","id":"mcpfleet-health","result":{}}`
		rpcError  = `{"jsonrpc":"2.0","id":"mcpfleet-health","error":{"code":-32022,"message":"unsupported protocol version"}}`
		html      = `<!DOCTYPE html><html><body><pre>Cannot POST /sse</pre></body></html>`
	)
	for _, tt := range []struct {
		name  string
		probe Probe
		a     Answer
		want  Verdict
	}{
		{"discover result", ProbeDiscover, Answer{200, "application/json", false, []byte(rpcResult)}, VerdictMCP},
		{"discover refused by an older server", ProbeDiscover, Answer{400, "application/json", false, []byte(rpcError)}, VerdictMCP},
		{"discover answered on a stream", ProbeDiscover, Answer{200, "text/event-stream", false, []byte("event: message\ndata: " + rpcResult + "\n\n")}, VerdictMCP},
		{"express 404", ProbeDiscover, Answer{404, "text/html", false, []byte(html)}, VerdictNone},
		{"405", ProbeDiscover, Answer{405, "text/plain", false, []byte("Method Not Allowed")}, VerdictNone},
		{"plain text 400", ProbeDiscover, Answer{400, "text/plain", false, []byte("Bad Request: missing session ID")}, VerdictNone},
		{"200 html", ProbeDiscover, Answer{200, "text/html", false, []byte(html)}, VerdictNone},
		{"json that is not json-rpc", ProbeDiscover, Answer{200, "application/json", false, []byte(`{"status":"ok"}`)}, VerdictNone},
		{"json-rpc 1.0", ProbeDiscover, Answer{200, "application/json", false, []byte(`{"jsonrpc":"1.0","result":{}}`)}, VerdictNone},
		{"empty 200", ProbeDiscover, Answer{200, "", false, nil}, VerdictNone},
		{"401 with a challenge", ProbeDiscover, Answer{401, "application/json", true, nil}, VerdictMCP},
		{"403 with a challenge", ProbeInitialize, Answer{403, "", true, nil}, VerdictMCP},
		{"401 without a challenge", ProbeDiscover, Answer{401, "text/plain", false, []byte("Unauthorized")}, VerdictNone},
		{"draining", ProbeDiscover, Answer{503, "application/json", false, []byte(`{"status":"draining"}`)}, VerdictDraining},
		{"draining to the SSE GET", ProbeSSE, Answer{503, "application/json", false, []byte(`{"status":"draining"}`)}, VerdictDraining},
		{"503 overloaded", ProbeDiscover, Answer{503, "application/json", false, []byte(`{"status":"overloaded"}`)}, VerdictFail},
		{"500 with json-rpc", ProbeInitialize, Answer{500, "application/json", false, []byte(rpcError)}, VerdictFail},
		{"401 challenge from a failing server", ProbeDiscover, Answer{502, "", true, nil}, VerdictFail},
		{"initialize result", ProbeInitialize, Answer{200, "text/event-stream", false, []byte("id: 1\ndata: " + rpcResult + "\n\n")}, VerdictMCP},
		{"endpoint event", ProbeSSE, Answer{200, "text/event-stream", false, []byte("event: endpoint\ndata: /message?sessionId=abc\n\n")}, VerdictMCP},
		{"endpoint event, CRLF", ProbeSSE, Answer{200, "text/event-stream", false, []byte("event: endpoint\r\ndata: /message?sessionId=abc\r\n\r\n")}, VerdictMCP},
		{"endpoint event without data", ProbeSSE, Answer{200, "text/event-stream", false, []byte("event: endpoint\ndata:\n\n")}, VerdictNone},
		{"message event on the SSE GET", ProbeSSE, Answer{200, "text/event-stream", false, []byte("data: " + rpcResult + "\n\n")}, VerdictNone},
		{"endpoint event as html", ProbeSSE, Answer{200, "text/html", false, []byte("event: endpoint\ndata: /message\n\n")}, VerdictNone},
		{"endpoint event with a 404", ProbeSSE, Answer{404, "text/event-stream", false, []byte("event: endpoint\ndata: /message\n\n")}, VerdictNone},
		{"json-rpc to the SSE GET", ProbeSSE, Answer{200, "application/json", false, []byte(rpcResult)}, VerdictNone},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Judge(tt.probe, tt.a); got != tt.want {
				t.Errorf("Judge(%v, %d %s %q) = %v, want %v", tt.probe, tt.a.Status, tt.a.MediaType, tt.a.Body, got, tt.want)
			}
		})
	}
}

// TestOrder: the probe that proved the endpoint last goes first, the
// others follow newest revision first; each is sent at most once.
func TestOrder(t *testing.T) {
	for _, tt := range []struct {
		last Probe
		want []Probe
	}{
		{ProbeDiscover, []Probe{ProbeDiscover, ProbeInitialize, ProbeSSE}},
		{ProbeInitialize, []Probe{ProbeInitialize, ProbeDiscover, ProbeSSE}},
		{ProbeSSE, []Probe{ProbeSSE, ProbeDiscover, ProbeInitialize}},
		{Probe(7), []Probe{ProbeDiscover, ProbeInitialize, ProbeSSE}},
	} {
		if diff := cmp.Diff(tt.want, Order(tt.last)); diff != "" {
			t.Errorf("Order(%v) (-want +got):\n%s", tt.last, diff)
		}
	}
}

// TestWorth: an initialize is not sent where server/discover's POST found
// no resource (404) or no POST (405); everything else is.
func TestWorth(t *testing.T) {
	for _, tt := range []struct {
		p        Probe
		discover *Answer
		want     bool
	}{
		{ProbeInitialize, nil, true},
		{ProbeInitialize, &Answer{Status: 400}, true},
		{ProbeInitialize, &Answer{Status: 404}, false},
		{ProbeInitialize, &Answer{Status: 405}, false},
		{ProbeSSE, &Answer{Status: 404}, true},
		{ProbeDiscover, &Answer{Status: 404}, true},
	} {
		if got := Worth(tt.p, tt.discover); got != tt.want {
			t.Errorf("Worth(%v, %+v) = %v, want %v", tt.p, tt.discover, got, tt.want)
		}
	}
}

// TestNoEndpoint: the reason names the URL, the status and the media type,
// and IsNoEndpoint knows it.
func TestNoEndpoint(t *testing.T) {
	got := NoEndpoint("http://127.0.0.1:3101/sse", Answer{Status: 404, MediaType: "text/html"})
	if want := "no MCP endpoint at http://127.0.0.1:3101/sse (HTTP 404, text/html)"; got != want {
		t.Errorf("NoEndpoint = %q, want %q", got, want)
	}
	if got := NoEndpoint("http://h/mcp", Answer{Status: 405}); got != "no MCP endpoint at http://h/mcp (HTTP 405)" {
		t.Errorf("NoEndpoint without a media type = %q", got)
	}
	if !IsNoEndpoint(got) || IsNoEndpoint("status 500") || IsNoEndpoint("") {
		t.Error("IsNoEndpoint does not tell its own reasons from others")
	}
}

// FuzzJudge: whatever the bytes, Judge decides without panicking, a server
// error never proves an endpoint, and without a JSON-RPC message, an
// endpoint event or a challenge nothing is proven.
func FuzzJudge(f *testing.F) {
	f.Add(int32(0), 200, "application/json", false, []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	f.Add(int32(2), 200, "text/event-stream", false, []byte("event: endpoint\ndata: /m?s=1\n\n"))
	f.Add(int32(1), 404, "text/html", false, []byte("<html>Cannot POST /mcp</html>"))
	f.Add(int32(0), 401, "", true, []byte(nil))
	f.Add(int32(0), 503, "application/json", false, []byte(`{"status":"draining"}`))
	f.Fuzz(func(t *testing.T, p int32, status int, mt string, challenge bool, body []byte) {
		a := Answer{Status: status, MediaType: mt, Challenge: challenge, Body: body}
		v := Judge(Probe(p), a)
		if status >= 500 && v == VerdictMCP {
			t.Fatalf("a %d proves an MCP endpoint", status)
		}
		if v == VerdictMCP && !challenge {
			switch {
			case Probe(p) == ProbeSSE && (status != 200 || mt != "text/event-stream"):
				t.Fatalf("a %d %s proves a 2024-11-05 endpoint", status, mt)
			case Probe(p) != ProbeSSE && mt != "text/event-stream" && !json.Valid(bytes.TrimSpace(body)):
				t.Fatalf("%q, not JSON, proves an MCP endpoint", body)
			}
		}
		if v == VerdictDraining && status != 503 {
			t.Fatalf("a %d is draining", status)
		}
	})
}

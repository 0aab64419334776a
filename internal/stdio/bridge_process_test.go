package stdio

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bridgeClient returns an HTTP client that reaches children through s.
func bridgeClient(s *Sockets) *http.Client {
	var d net.Dialer
	return &http.Client{Transport: &http.Transport{DialContext: s.Dial(d.DialContext)}}
}

// TestBridgeBothEras: the official Go SDK client, in the session era and
// in the stateless one, lists and calls a stdio child's tools through its
// bridge, with progress.
func TestBridgeBothEras(t *testing.T) {
	needBin(t)
	c := startChild(t, "e-1", testserverArgv("e-1"), nil)
	socks, err := NewSockets(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(socks.Close)
	bridge := NewBridge(c, 0, nil, nil)
	if err := socks.Serve("e-1", bridge); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(socks.dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("socket directory: %v, %v; want mode 0700", fi.Mode(), err)
	}
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var progress atomic.Int32
			client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
				ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress.Add(1) },
			})
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: URL("e-1"), HTTPClient: bridgeClient(socks)}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			tools, err := cs.ListTools(ctx, nil)
			if err != nil || len(tools.Tools) < 3 {
				t.Fatalf("tools/list: %v, %v", tools, err)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{
				Name: "sleep", Arguments: map[string]any{"seconds": 0.5, "progress_every": 0.1},
				Meta: mcp.Meta{"progressToken": "p-" + version},
			})
			if err != nil || res.IsError {
				t.Fatalf("sleep: %v, %v", res, err)
			}
			if progress.Load() < 2 {
				t.Errorf("%d progress notifications, want several", progress.Load())
			}
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
			if err != nil || len(res.Content) == 0 || res.Content[0].(*mcp.TextContent).Text != "e-1" {
				t.Errorf("whoami: %v, %v", res, err)
			}
			bridge.mu.Lock()
			n := len(bridge.sessions)
			bridge.mu.Unlock()
			if want := map[bool]int{true: 0, false: 1}[version >= statelessVersion]; n != want {
				t.Errorf("%d sessions on the bridge, want %d for %s", n, want, version)
			}
		})
	}
}

// TestBridgeEndsIdleSessions: a session nobody DELETEd, idle past the
// bridge's bound, ends at the next initialize; one in use stays.
func TestBridgeEndsIdleSessions(t *testing.T) {
	needBin(t)
	c := startChild(t, "i-1", testserverArgv("i-1"), nil)
	b := NewBridge(c, time.Hour, nil, nil)
	open := func() *bsession {
		cs, err := c.Open()
		if err != nil {
			t.Fatal(err)
		}
		s := newBSession(cs, nil, func() {})
		b.mu.Lock()
		b.sessions[newSessionID()] = s
		b.mu.Unlock()
		return s
	}
	old, fresh := open(), open()
	old.touch(time.Now().Add(-2 * time.Hour))
	fresh.touch(time.Now().Add(-30 * time.Minute))
	b.sweep(time.Now())
	b.mu.Lock()
	n := len(b.sessions)
	b.mu.Unlock()
	if n != 1 || c.Info().Sessions != 1 {
		t.Errorf("after the sweep: %d bridge sessions, %d on the child; want the fresh one alone", n, c.Info().Sessions)
	}
	if _, open := <-old.s.Messages(); open {
		t.Error("the idle session's child session goes on")
	}
}

// TestBridgeAnswersOnAStream: a session's request is answered on an SSE
// stream when the client takes one, and as JSON when it takes JSON alone.
func TestBridgeAnswersOnAStream(t *testing.T) {
	needBin(t)
	srv := httptest.NewServer(NewBridge(startChild(t, "s-1", testserverArgv("s-1"), nil), 0, nil, nil))
	t.Cleanup(srv.Close)
	post := func(sid, accept, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+mcpPath, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", accept)
		if sid != "" {
			req.Header.Set(headerSession, sid)
			req.Header.Set(headerProtocol, "2025-11-25")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	both := "application/json, text/event-stream"
	sid := post("", both, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`).Header.Get(headerSession)
	if sid == "" {
		t.Fatal("initialize gave no session")
	}
	post(sid, both, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for _, c := range []struct{ accept, want string }{{both, "text/event-stream"}, {"application/json", "application/json"}} {
		resp := post(sid, c.accept, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`)
		b, _ := io.ReadAll(resp.Body)
		if ct := resp.Header.Get("Content-Type"); ct != c.want || !strings.Contains(string(b), `"s-1"`) {
			t.Errorf("Accept %q: %s %q, want %s and the answer", c.accept, ct, b, c.want)
		}
	}
}

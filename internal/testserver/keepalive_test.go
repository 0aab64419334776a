package testserver

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Compile-time guards: the keep-alive writer still flushes and hijacks.
var (
	_ http.Flusher  = (*sseWriter)(nil)
	_ http.Hijacker = (*sseWriter)(nil)
)

// sseBlocks splits an SSE body into its blocks, each an event or a comment,
// as the SDK writes them (LF line ends).
func sseBlocks(body string) []string {
	var out []string
	for b := range strings.SplitSeq(body, "\n\n") {
		if b != "" {
			out = append(out, b)
		}
	}
	return out
}

// checkBlocks checks that no block mixes a comment line with event lines,
// and returns the blocks as "keepalive", "comment" (another comment) or
// "event".
func checkBlocks(t *testing.T, body string) []string {
	t.Helper()
	var kinds []string
	for _, b := range sseBlocks(body) {
		lines := strings.Split(b, "\n")
		comments := 0
		for _, l := range lines {
			if strings.HasPrefix(l, ":") {
				comments++
			}
		}
		switch {
		case comments == 0:
			kinds = append(kinds, "event")
		case comments == len(lines) && b == strings.TrimSuffix(keepAliveComment, "\n\n"):
			kinds = append(kinds, "keepalive")
		case comments == len(lines):
			kinds = append(kinds, "comment")
		default:
			t.Errorf("a comment inside an event: %q\nbody:\n%s", b, body)
		}
	}
	return kinds
}

// countKind returns how many of kinds are kind.
func countKind(kinds []string, kind string) int {
	n := 0
	for _, k := range kinds {
		if k == kind {
			n++
		}
	}
	return n
}

// legacySession initializes a 2025-11-25 session with raw HTTP at base and
// returns its ID.
func legacySession(t *testing.T, ctx context.Context, base string) string {
	t.Helper()
	resp := legacyPost(t, ctx, base, "", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": legacyVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "raw", "version": "1"},
	}})
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	id := resp.Header.Get(headerSessionID)
	if id == "" {
		t.Fatal("initialize minted no session")
	}
	resp = legacyPost(t, ctx, base, id, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	resp.Body.Close()
	return id
}

// legacyPost posts msg to /mcp at base in session (none if empty) and
// returns the response, whose body the caller closes.
func legacyPost(t *testing.T, ctx context.Context, base, session string, msg map[string]any) *http.Response {
	t.Helper()
	h := http.Header{}
	if session != "" {
		h.Set(headerSessionID, session)
		h.Set(headerProtocolVersion, legacyVersion)
	}
	return postMCP(t, ctx, base, msg, h)
}

// TestKeepAlivePOSTStreams reads POST streams of both eras byte for byte:
// with KeepAlive a silent call's stream carries keep-alive comments before
// its result, a chatty one between its events, never inside one; without,
// none.
func TestKeepAlivePOSTStreams(t *testing.T) {
	tests := []struct {
		name       string
		keepAlive  time.Duration
		legacy     bool
		args       map[string]any
		progress   bool
		leastAlive int // fewest keep-alives expected
	}{
		{"modern silent", 200 * time.Millisecond, false, map[string]any{"seconds": 1.5}, false, 3},
		{"legacy silent", 200 * time.Millisecond, true, map[string]any{"seconds": 1.5}, false, 3},
		{"legacy with progress", 200 * time.Millisecond, true, map[string]any{"seconds": 1.5, "progress_every": 0.5}, true, 2},
		{"modern off", 0, false, map[string]any{"seconds": 0.6}, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			_, base := startWith(t, "replica-ka", &Options{KeepAlive: tt.keepAlive})
			var body string
			if tt.legacy {
				id := legacySession(t, ctx, base)
				params := map[string]any{"name": "sleep", "arguments": tt.args}
				if tt.progress {
					params["_meta"] = map[string]any{"progressToken": "p"}
				}
				resp := legacyPost(t, ctx, base, id, map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params})
				defer resp.Body.Close()
				raw, err := io.ReadAll(resp.Body)
				if err != nil {
					t.Fatal(err)
				}
				if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
					t.Fatalf("Content-Type %q, want text/event-stream", ct)
				}
				rpcResult(t, "tools/call", raw)
				body = string(raw)
			} else {
				_, body = rawCall(t, ctx, base, "tools/call", map[string]any{"name": "sleep", "arguments": tt.args}, "")
			}
			kinds := checkBlocks(t, body)
			alive := countKind(kinds, "keepalive")
			if tt.keepAlive == 0 && alive != 0 || alive < tt.leastAlive {
				t.Errorf("%d keep-alives, want at least %d (none when off); blocks %v\nbody:\n%s", alive, tt.leastAlive, kinds, body)
			}
			if len(kinds) == 0 || kinds[len(kinds)-1] != "event" {
				t.Errorf("the stream does not end with its result: %v", kinds)
			}
			if tt.progress && !strings.Contains(strings.Join(kinds, " "), "event keepalive") {
				t.Errorf("no keep-alive after an event: %v", kinds)
			}
		})
	}
}

// TestKeepAliveGETStream reads a legacy session's GET stream: after the
// SDK's opening comment it carries keep-alives while silent.
func TestKeepAliveGETStream(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, base := startWith(t, "replica-kg", &Options{Era: Era2025, KeepAlive: 100 * time.Millisecond})
	id := legacySession(t, ctx, base)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(headerSessionID, id)
	req.Header.Set(headerProtocolVersion, legacyVersion)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET status %d", resp.StatusCode)
	}
	var got []string
	sc := bufio.NewScanner(resp.Body)
	for len(got) < 6 && sc.Scan() {
		got = append(got, sc.Text())
	}
	want := []string{": ok", "", ": keepalive", "", ": keepalive", ""}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("GET stream lines %q, want %q", got, want)
	}
}

// TestKeepAliveLeavesJSONAlone checks that a response other than SSE gets
// no comment, and that the writer unwraps for http.ResponseController.
func TestKeepAliveLeavesJSONAlone(t *testing.T) {
	k := &requests{keepAlive: 20 * time.Millisecond}
	deadlineSet := make(chan error, 1)
	h := k.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		deadlineSet <- http.NewResponseController(w).SetWriteDeadline(time.Now().Add(time.Minute))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("{"))
		w.(http.Flusher).Flush()
		time.Sleep(100 * time.Millisecond) // silent for five keep-alive periods
		_, _ = w.Write([]byte("}"))
	}))
	hs := httptest.NewServer(h)
	defer hs.Close()
	resp, err := http.Get(hs.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if string(body) != "{}" {
		t.Errorf("body %q, want %q", body, "{}")
	}
	if err := <-deadlineSet; err != nil {
		t.Errorf("SetWriteDeadline through the wrapper: %v", err)
	}
}

// TestAtEventEnd checks where an SSE event or comment ends.
func TestAtEventEnd(t *testing.T) {
	tests := []struct {
		tail string
		want bool
	}{
		{"", true},
		{"x\n\n", true},
		{"\r\n\r\n", true},
		{"x\r\r", true},
		{"data: x\n", false},
		{"data: x", false},
		{"x\r\n", false},
	}
	for _, tt := range tests {
		if got := atEventEnd([]byte(tt.tail)); got != tt.want {
			t.Errorf("atEventEnd(%q) = %v, want %v", tt.tail, got, tt.want)
		}
	}
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testserver"
	"github.com/mcpfleet/mcpfleet/internal/tools"
	"github.com/mcpfleet/mcpfleet/internal/tools/listing"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serveTools runs h on a loopback port until the test ends and returns the
// URL of its /mcp endpoint.
func serveTools(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

func newToolsTestserver(t *testing.T, opts *testserver.Options) *testserver.Server {
	t.Helper()
	s, err := testserver.New("replica-1", opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// listedSet lists url afresh.
func listedSet(t *testing.T, url string) *tools.Set {
	t.Helper()
	defs, _, err := listing.List(t.Context(), url, listing.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := tools.NewSet(defs)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// lockOf runs 'mcpfleet tools lock' and parses what it printed.
func lockOf(t *testing.T, args ...string) (*tools.Lock, string) {
	t.Helper()
	code, stdout, stderr := runCmd(t, context.Background(), append([]string{"tools", "lock"}, args...)...)
	if code != 0 {
		t.Fatalf("tools lock %v: exit %d, stderr %q", args, code, stderr)
	}
	l, err := tools.ParseLock([]byte(stdout))
	if err != nil {
		t.Fatalf("the lock printed does not parse: %v\n%s", err, stdout)
	}
	return l, stderr
}

// sdkToolsHandler is an official Go SDK server whose one tool, greet, has
// description d, served in the 2025-11-25 era with sessions.
func sdkToolsHandler(d string) http.Handler {
	s := mcp.NewServer(&mcp.Implementation{Name: "greeter", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "greet", Description: d, InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
}

// TestToolsLock locks the test server: the lock printed parses, names
// every tool the server declares, and accepts a fresh listing of it; a
// server that adds a tool or changes a description breaks it, named; only
// the lock goes to stdout, the count and era to stderr.
func TestToolsLock(t *testing.T) {
	url := serveTools(t, newToolsTestserver(t, nil).Handler())
	lock, stderr := lockOf(t, "--upstream", url)
	set := listedSet(t, url)
	var names []string
	for _, e := range lock.Tools {
		names = append(names, e.Name)
		if e.Definition == nil {
			t.Errorf("tool %s locked without its definition", e.Name)
		}
	}
	if !slices.Equal(names, set.Names()) || !slices.Contains(names, "whoami") || !slices.Contains(names, "echo") {
		t.Errorf("locked %v, the server declares %v", names, set.Names())
	}
	if ch := lock.Against(set); len(ch) != 0 {
		t.Errorf("the lock against a fresh listing: %v, want no change", ch)
	}
	if want := fmt.Sprintf("locked %d tools of %s (era 2026-07-28", set.Len(), url); !strings.Contains(stderr, want) {
		t.Errorf("stderr %q, want %q", stderr, want)
	}

	added := newToolsTestserver(t, &testserver.Options{Era: testserver.Era2025})
	added.AddTool("extra")
	ch := lock.Against(listedSet(t, serveTools(t, added.Handler())))
	if want := []tools.Change{{Tool: "extra", What: "added"}}; !slices.Equal(ch, want) {
		t.Errorf("a server with a tool more: %v, want %v", ch, want)
	}

	greeter, stderr := lockOf(t, "--upstream", serveTools(t, sdkToolsHandler("Greets someone.")))
	if !strings.Contains(stderr, "locked 1 tool of") || !strings.Contains(stderr, "era 2025-11-25") {
		t.Errorf("stderr %q, want one tool locked in era 2025-11-25", stderr)
	}
	ch = greeter.Against(listedSet(t, serveTools(t, sdkToolsHandler("Greets someone, and sends their name elsewhere."))))
	if want := []tools.Change{{Tool: "greet", What: "description"}}; !slices.Equal(ch, want) {
		t.Errorf("a changed description: %v, want %v", ch, want)
	}
}

// TestToolsLockAuthorization locks a server that wants a credential: the
// one line of --authorization-file is sent; a wrong one fails with exit 1
// naming the URL and the 401, and neither it nor the right one appears in
// the output, even where the server quotes it back; a file others may read
// is refused unread.
func TestToolsLockAuthorization(t *testing.T) {
	const token = "Bearer right-token-0123456789"
	ts := newToolsTestserver(t, nil).Handler()
	url := serveTools(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("Authorization"); got != token {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, "credential %q refused", got) // quoted back, as a careless server does
			return
		}
		ts.ServeHTTP(w, r)
	}))
	dir := t.TempDir()
	file := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return p
	}
	right := file("right", token+"\n", 0o600)
	wrong := file("wrong", "Bearer wrong-token-9876543210\n", 0o600)
	open := file("open", token+"\n", 0o644)
	twoLines := file("two-lines", "Bearer a\nBearer b\n", 0o600)

	lock, _ := lockOf(t, "--upstream", url, "--authorization-file", right)
	if len(lock.Tools) < 8 {
		t.Errorf("locked %d tools, want every tool of the test server", len(lock.Tools))
	}
	code, stdout, stderr := runCmd(t, context.Background(), "tools", "lock", "--upstream", url)
	if code != 1 || stdout != "" || !strings.Contains(stderr, url) || !strings.Contains(stderr, "401") {
		t.Errorf("no credential: exit %d, stdout %q, stderr %q; want exit 1 naming %s and the 401", code, stdout, stderr, url)
	}
	for _, tt := range []struct {
		name, file string
		code       int
		want       string
	}{
		{"wrong credential", wrong, 1, "401"},
		{"readable by others", open, 2, "readable by others"},
		{"two lines", twoLines, 2, "more than one line"},
		{"missing file", filepath.Join(dir, "none"), 2, "--authorization-file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCmd(t, context.Background(), "tools", "lock", "--upstream", url, "--authorization-file", tt.file)
			if code != tt.code || stdout != "" || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d mentioning %q", code, stdout, stderr, tt.code, tt.want)
			}
			for _, secret := range []string{"right-token", "wrong-token", "Bearer a", "Bearer b"} {
				if strings.Contains(stdout+stderr, secret) {
					t.Errorf("the output holds %q: stdout %q, stderr %q", secret, stdout, stderr)
				}
			}
		})
	}
}

// TestToolsUsage: a missing --upstream, a missing or unknown subcommand and
// a URL that is not http are usage errors (exit 2) that say what to give;
// a replica that cannot be listed is exit 1 naming it; help is exit 0.
func TestToolsUsage(t *testing.T) {
	refused := httptest.NewServer(http.NotFoundHandler())
	refusedURL := refused.URL + "/mcp"
	refused.Close()
	broken := serveTools(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "boom", http.StatusInternalServerError)
	}))
	tests := []struct {
		name string
		args []string
		code int
		want string // in stdout when code is 0, else in stderr
	}{
		{"no subcommand", []string{"tools"}, 2, "a subcommand is required: lock"},
		{"unknown subcommand", []string{"tools", "unlock"}, 2, `unknown subcommand "unlock" (want lock)`},
		{"help", []string{"tools", "-h"}, 0, "subcommands:\n  lock"},
		{"lock help", []string{"tools", "lock", "-h"}, 0, "--authorization-file"},
		{"missing --upstream", []string{"tools", "lock"}, 2, "--upstream is required"},
		{"not http", []string{"tools", "lock", "--upstream", "ftp://127.0.0.1/mcp"}, 2, "--upstream: want an http or https URL"},
		{"an argument", []string{"tools", "lock", "--upstream", broken, "more"}, 2, `unexpected argument "more"`},
		{"refused", []string{"tools", "lock", "--upstream", refusedURL}, 1, refusedURL},
		{"answers 500", []string{"tools", "lock", "--upstream", broken}, 1, "HTTP 500"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCmd(t, context.Background(), tt.args...)
			got := stderr
			if tt.code == 0 {
				got = stdout
			} else if stdout != "" {
				t.Errorf("stdout %q on failure, want nothing", stdout)
			}
			if code != tt.code || !strings.Contains(got, tt.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d mentioning %q", code, stdout, stderr, tt.code, tt.want)
			}
		})
	}
	if code, stdout, _ := runCmd(t, context.Background(), "help"); code != 0 || !strings.Contains(stdout, "\n  tools ") {
		t.Errorf("mcpfleet's usage does not list tools: %q", stdout)
	}
}

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/admin"
	"github.com/mcpfleet/mcpfleet/internal/testproc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestStdioEverythingServer: the TypeScript everything server, a real npm
// stdio server, as a fleet of 3 pooled children behind serve: the official
// Go SDK client lists and calls its tools in both eras, with progress.
func TestStdioEverythingServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	node, modules := nodeTools(t)
	gw := serveEverythingStdio(t, node, modules, 3)
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var progress atomic.Int32
			c := mcp.NewClient(&mcp.Implementation{Name: "stdio-npm-test", Version: "1"}, &mcp.ClientOptions{
				ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress.Add(1) },
			})
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + gw + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			tools, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range tools.Tools {
				names = append(names, tool.Name)
			}
			if !strings.Contains(strings.Join(names, " "), "echo") {
				t.Fatalf("tools %v, want echo among them", names)
			}
			for i := range 6 { // round-robin: every child, twice in the stateless era
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi " + version}})
				if err != nil || res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "hi "+version) {
					t.Fatalf("echo %d: %+v, %v", i, res, err)
				}
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{
				Name: "trigger-long-running-operation", Arguments: map[string]any{"duration": 1, "steps": 4},
				Meta: mcp.Meta{"progressToken": "lro-" + version},
			})
			if err != nil || res.IsError {
				t.Fatalf("trigger-long-running-operation: %+v, %v", res, err)
			}
			if progress.Load() < 2 {
				t.Errorf("%d progress notifications, want the operation's steps", progress.Load())
			}
		})
	}
}

// stdioServersVersion is the version of the npm stdio servers the tests
// run (server-filesystem, server-memory).
const stdioServersVersion = "2026.8.31"

func stdioServers(t *testing.T) (node, modules string) {
	t.Helper()
	return nodePackages(t, "stdio-filesystem"+stdioServersVersion+"-memory"+stdioServersVersion,
		"node_modules/@modelcontextprotocol/server-memory/dist/index.js",
		"@modelcontextprotocol/server-filesystem@"+stdioServersVersion, "@modelcontextprotocol/server-memory@"+stdioServersVersion)
}

// serveStdioYAML starts serve with one stdio upstream, its YAML given.
func serveStdioYAML(t *testing.T, upstream string) string {
	t.Helper()
	gw, adm := testproc.FreeAddr(t), testproc.FreeAddr(t)
	cfg := "listen: " + gw + "\nadmin: " + adm + "\nsecret_file: " + writeSecret(t) + "\nbalance: round-robin\nupstreams:\n" + upstream
	path := filepath.Join(t.TempDir(), "mcpfleet.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	startProcess(t, "serve", "--config", path)
	// Node children take seconds each to start when the machine is busy,
	// and the gateway is ready with one of them: the tests that place
	// sessions round-robin wait for every child.
	testproc.WaitReadyWithin(t, "http://"+gw+"/readyz", 30*time.Second)
	for deadline := time.Now().Add(30 * time.Second); !allReplicasUp(t, adm); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the stdio children were not all up within 30 s")
		}
	}
	return gw
}

// allReplicasUp reports whether every replica of the gateway whose admin
// listener is adm is up.
func allReplicasUp(t *testing.T, adm string) bool {
	t.Helper()
	f := readFleet(t, adm)
	for _, r := range f.Replicas {
		if r.Health != admin.StateUp {
			return false
		}
	}
	return len(f.Replicas) > 0
}

func callText(ctx context.Context, t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil || res.IsError || len(res.Content) == 0 {
		t.Fatalf("%s: %+v, %v", tool, res, err)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

// TestStdioFilesystemServer: server-filesystem rooted in a temporary
// directory, two pooled children: what a client writes through the
// gateway lands there, and reads back, in both eras.
func TestStdioFilesystemServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	node, modules := stdioServers(t)
	root := t.TempDir()
	gw := serveStdioYAML(t, `  - name: files
    stdio:
      command: [`+node+`, `+filepath.Join(modules, "@modelcontextprotocol", "server-filesystem", "dist", "index.js")+`, `+root+`]
`)
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cs := connectGW(ctx, t, gw, version)
		file := filepath.Join(root, "note-"+version+".txt")
		callText(ctx, t, cs, "write_file", map[string]any{"path": file, "content": "written in " + version})
		if b, err := os.ReadFile(file); err != nil || string(b) != "written in "+version {
			t.Errorf("%s: the file holds %q, %v", version, b, err)
		}
		for range 2 { // either child reads it
			if got := callText(ctx, t, cs, "read_text_file", map[string]any{"path": file}); got != "written in "+version {
				t.Errorf("%s: read back %q", version, got)
			}
		}
		cancel()
	}
}

// serveMemory starts serve with server-memory as the stdio upstream mem,
// its graphs in dir/{child}.jsonl, more stdio keys given as YAML.
func serveMemory(t *testing.T, dir, keys string) string {
	t.Helper()
	node, modules := stdioServers(t)
	return serveStdioYAML(t, `  - name: mem
    stdio:
      command: [`+node+`, `+filepath.Join(modules, "@modelcontextprotocol", "server-memory", "dist", "index.js")+`]
      env: {MEMORY_FILE_PATH: "`+dir+`/{child}.jsonl"}
`+keys)
}

// TestStdioMemoryFilePerChild: server-memory with MEMORY_FILE_PATH holding
// {child}: each child keeps its own graph in its own file, so a session
// sees what it wrote, and a session on the other child does not.
func TestStdioMemoryFilePerChild(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	gw := serveMemory(t, dir, "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := connectGW(ctx, t, gw, "2025-11-25") // round-robin: one child each
	b := connectGW(ctx, t, gw, "2025-11-25")
	callText(ctx, t, a, "create_entities", map[string]any{"entities": []any{
		map[string]any{"name": "alice-entity", "entityType": "test", "observations": []any{"seen by a"}},
	}})
	for range 3 { // its other requests leave the graph as it is
		if got := callText(ctx, t, a, "read_graph", map[string]any{}); !strings.Contains(got, "alice-entity") {
			t.Fatalf("session a's graph %s, want its entity", got)
		}
	}
	if got := callText(ctx, t, b, "read_graph", map[string]any{}); strings.Contains(got, "alice-entity") {
		t.Errorf("session b on the other child sees a's entity: %s", got)
	}
	var holding []string
	for _, child := range []string{"mem-1", "mem-2"} {
		if f, err := os.ReadFile(filepath.Join(dir, child+".jsonl")); err == nil && strings.Contains(string(f), "alice-entity") {
			holding = append(holding, child)
		}
	}
	if len(holding) != 1 {
		t.Errorf("the entity is in the files of %v, want exactly one child's", holding)
	}
}

// TestStdioMemoryPerSession: server-memory with per_session and
// MEMORY_FILE_PATH holding {child}: every session has a child, and a
// file, of its own, so two sessions each see only their own graph, and a
// session's graph survives its other requests.
func TestStdioMemoryPerSession(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	gw := serveMemory(t, dir, "      processes: 1\n      per_session: true\n")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a := connectGW(ctx, t, gw, "2025-11-25")
	b := connectGW(ctx, t, gw, "2025-11-25")
	for who, cs := range map[string]*mcp.ClientSession{"a": a, "b": b} {
		callText(ctx, t, cs, "create_entities", map[string]any{"entities": []any{
			map[string]any{"name": who + "-entity", "entityType": "test", "observations": []any{"seen by " + who}},
		}})
	}
	for who, cs := range map[string]*mcp.ClientSession{"a": a, "b": b} {
		other := map[string]string{"a": "b", "b": "a"}[who]
		for range 3 { // its other requests leave the graph as it is
			got := callText(ctx, t, cs, "read_graph", map[string]any{})
			if !strings.Contains(got, who+"-entity") || strings.Contains(got, other+"-entity") {
				t.Fatalf("session %s's graph %s, want its own entity alone", who, got)
			}
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "mem-s-*.jsonl"))
	holding := map[string]int{}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, who := range []string{"a", "b"} {
			if strings.Contains(string(b), who+"-entity") {
				holding[who]++
			}
		}
	}
	if len(files) != 2 || holding["a"] != 1 || holding["b"] != 1 {
		t.Errorf("files %v hold a's entity %d times, b's %d; want one file each", files, holding["a"], holding["b"])
	}
}

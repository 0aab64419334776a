package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The clients that people point at a server, against a pooled stdio fleet:
// the official TypeScript SDK's client, in its 2025 release line
// (@modelcontextprotocol/sdk) and its 2026 one (@modelcontextprotocol/client),
// and the MCP Inspector's CLI, which is built on the latter.
const (
	tsClientVersion  = "2.4.0"
	inspectorVersion = "2.12.0"
)

// clientTools returns Node and a node_modules with both TypeScript SDK
// client lines, the Inspector and the everything server, installing them on
// first use.
func clientTools(t *testing.T) (node, modules string) {
	t.Helper()
	return nodePackages(t, "stdio-clients-sdk"+tsSDKVersion+"-client"+tsClientVersion+"-inspector"+inspectorVersion+"-everything"+everythingServer,
		"node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js",
		"@modelcontextprotocol/sdk@"+tsSDKVersion, "@modelcontextprotocol/client@"+tsClientVersion,
		"@modelcontextprotocol/inspector@"+inspectorVersion, "@modelcontextprotocol/server-everything@"+everythingServer)
}

// runNode runs node with args in a process group of its own, with env as
// its whole environment, and returns its standard output; the group is
// killed if it outlives limit.
func runNode(t *testing.T, limit time.Duration, env []string, node string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // anything it left behind
	if err != nil {
		t.Fatalf("node %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, stderr.String())
	}
	return out
}

// serveEverythingStdio starts serve with the TypeScript everything server in
// stdio mode as n pooled children.
func serveEverythingStdio(t *testing.T, node, modules string, n int) string {
	t.Helper()
	server := filepath.Join(modules, "@modelcontextprotocol", "server-everything", "dist", "index.js")
	return serveStdioYAML(t, `  - name: everything
    stdio:
      command: [`+node+`, `+server+`, stdio]
      processes: `+strconv.Itoa(n)+`
`)
}

// TestStdioTypeScriptClients: the official TypeScript SDK client lists and
// calls the tools of 3 pooled everything-server children, with progress:
// the 2025 line in the session era, the 2026 line in both (pinned to
// 2026-07-28 for the stateless one, whose client refuses a list result
// without the SEP-2549 cache hints).
func TestStdioTypeScriptClients(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	node, modules := clientTools(t)
	gw := serveEverythingStdio(t, node, modules, 3)
	script := nodeScript(t, modules, "stdio-client.mjs")
	for _, c := range []struct{ line, era, version string }{
		{"v1", "legacy", ""}, {"v2", "legacy", "2025-11-25"}, {"v2", "modern", "2026-07-28"},
	} {
		t.Run(c.line+"-"+c.era, func(t *testing.T) {
			out := runNode(t, 60*time.Second, []string{"PATH=/usr/bin:/bin"}, node, script, c.line, c.era, "http://"+gw+"/mcp")
			var got struct {
				Version  *string
				Tools    []string
				Echo     string
				Long     string
				Progress int
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("client said %q: %v", out, err)
			}
			if c.version != "" && (got.Version == nil || *got.Version != c.version) {
				t.Errorf("negotiated %v, want %s", got.Version, c.version)
			}
			if !slices.Contains(got.Tools, "echo") || !slices.Contains(got.Tools, "trigger-long-running-operation") {
				t.Errorf("tools %v, want echo and trigger-long-running-operation", got.Tools)
			}
			if want := "Echo: hi " + c.line + " " + c.era; got.Echo != want {
				t.Errorf("echo said %q, want %q", got.Echo, want)
			}
			if !strings.Contains(got.Long, "Steps: 4") || got.Progress < 2 {
				t.Errorf("the long-running operation: %q with %d progress notifications, want its result and its steps", got.Long, got.Progress)
			}
		})
	}
}

// TestStdioInspectorCLI: the MCP Inspector's CLI, in both of its protocol
// eras, lists the tools of 3 pooled everything-server children and calls
// the long-running one with a progress token. The CLI does not
// show progress (it runs its client with progress off), so that call proves
// that a stream of progress notifications then the result reaches it whole;
// TestStdioTypeScriptClients counts the notifications.
func TestStdioInspectorCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	node, modules := clientTools(t)
	gw := serveEverythingStdio(t, node, modules, 3)
	inspector := filepath.Join(modules, "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js")
	// A home of its own, and secrets kept in memory: nothing of the
	// Inspector's (catalog, secrets, OAuth state) lands outside the test.
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "MCP_INSPECTOR_SECRET_STORE=memory"}
	for _, era := range []string{"legacy", "modern"} {
		t.Run(era, func(t *testing.T) {
			cli := func(args ...string) map[string]any {
				t.Helper()
				args = append([]string{inspector, "--cli", "--transport", "http", "--server-url", "http://" + gw + "/mcp",
					"--protocol-era", era, "--format", "json", "--quiet"}, args...)
				out := runNode(t, 60*time.Second, env, node, args...)
				var got struct {
					Result map[string]any
				}
				if err := json.Unmarshal(out, &got); err != nil || got.Result == nil {
					t.Fatalf("inspector said %q: %v", out, err)
				}
				return got.Result
			}
			var names []string
			for _, tool := range cli("--method", "tools/list")["tools"].([]any) {
				names = append(names, tool.(map[string]any)["name"].(string))
			}
			if !slices.Contains(names, "echo") || !slices.Contains(names, "trigger-long-running-operation") {
				t.Errorf("tools %v, want echo and trigger-long-running-operation", names)
			}
			got := inspectorText(cli("--method", "tools/call", "--tool-name", "trigger-long-running-operation",
				"--tool-args-json", `{"duration":1,"steps":4}`, "--tool-metadata", "progressToken=inspector-"+era))
			if !strings.Contains(got, "Steps: 4") {
				t.Errorf("the long-running operation said %q", got)
			}
		})
	}
}

// inspectorText returns the text of a tools/call result's first content block.
func inspectorText(result map[string]any) string {
	content, _ := result["content"].([]any)
	if len(content) == 0 {
		return ""
	}
	text, _ := content[0].(map[string]any)["text"].(string)
	return text
}

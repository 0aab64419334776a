package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testproc"
)

// The TypeScript side of the 2024-11-05 HTTP+SSE transport: the official
// TypeScript SDK's SSE client and the TypeScript everything server in SSE
// mode, on Node 22 and npm packages cached as scripts/conformance.sh caches
// its own (scripts/lib/node.sh). Without Node or npm the test skips, or
// fails when MCPFLEET_REQUIRE_NODE=1.

const (
	nodeMajor        = "22"
	tsSDKVersion     = "1.32.2"
	everythingServer = "2026.8.31"
)

// nodeTools returns Node and the node_modules directory holding the
// TypeScript SDK and the everything server, installing them on first use.
func nodeTools(t *testing.T) (node, modules string) {
	t.Helper()
	return nodePackages(t, "sse2024-sdk"+tsSDKVersion+"-everything"+everythingServer,
		"node_modules/@modelcontextprotocol/server-everything/dist/index.js",
		"@modelcontextprotocol/sdk@"+tsSDKVersion, "@modelcontextprotocol/server-everything@"+everythingServer)
}

// nodePackages returns Node and a node_modules with pkgs, installed once
// into the cache directory named by tag (scripts/lib/node.sh); check is a
// path there that a complete install has. It skips (or fails, see
// skipWithoutNode) when they cannot be had.
func nodePackages(t *testing.T, tag, check string, pkgs ...string) (node, modules string) {
	t.Helper()
	for _, tool := range []string{"bash", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			skipWithoutNode(t, tool+" not on PATH")
		}
	}
	root := os.Getenv("MCPFLEET_CACHE")
	if root == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			skipWithoutNode(t, "no cache directory: "+err.Error())
		}
		root = filepath.Join(home, ".cache", "mcpfleet")
	}
	dir := filepath.Join(root, "node", "node"+nodeMajor+"-"+tag)
	log := filepath.Join(t.TempDir(), "npm-install.log")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	args := append([]string{filepath.Join("..", "..", "scripts", "lib", "node.sh"), dir, nodeMajor, log, check}, pkgs...)
	out, err := exec.CommandContext(ctx, "bash", args...).Output()
	if err != nil {
		b, _ := os.ReadFile(log)
		skipWithoutNode(t, "installing Node "+nodeMajor+" and the TypeScript packages failed: "+err.Error()+"\n"+string(b))
	}
	return strings.TrimSpace(string(out)), filepath.Join(dir, "node_modules")
}

// nodeScript copies testdata/name into a temporary directory beside a
// link to modules, where its ESM imports resolve (from the script's own
// directory), and returns the copy's path.
func nodeScript(t *testing.T, modules, name string) string {
	t.Helper()
	dir := t.TempDir()
	script, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "client.mjs"), script, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "client.mjs")
}

func skipWithoutNode(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("MCPFLEET_REQUIRE_NODE") == "1" {
		t.Fatal(why + ", and MCPFLEET_REQUIRE_NODE=1")
	}
	t.Skip(why + "; set MCPFLEET_REQUIRE_NODE=1 to fail instead")
}

// startEverything runs the TypeScript everything server with transport
// mode (sse, streamableHttp) on a free loopback port until the test ends,
// and returns its address once it accepts connections.
func startEverything(t *testing.T, node, modules, mode string) string {
	t.Helper()
	env, err := exec.LookPath("env")
	if err != nil {
		t.Skip("no env(1)")
	}
	addr := testproc.FreeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	testproc.Start(t, env, "PORT="+port, node, filepath.Join(modules, "@modelcontextprotocol", "server-everything", "dist", "index.js"), mode)
	waitListening(t, addr)
	return addr
}

// waitListening waits until addr accepts connections (a GET on an SSE
// server would open a session).
func waitListening(t *testing.T, addr string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not listening after 20s", addr)
		}
	}
}

// TestSSETransportTypeScript is the Done-when of the 2024-11-05 transport
// with TypeScript: three everything servers in SSE mode, two mcpfleet serve
// processes sharing a secret file, and the TypeScript SDK's
// SSEClientTransport opening its session through gateway A and POSTing
// through A and B by turns (testdata/sse2024-client.mjs): 20 echo calls on
// one session all succeed, all at one replica.
func TestSSETransportTypeScript(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	node, modules := nodeTools(t)
	var ups, ports []string
	for range 3 {
		addr := startEverything(t, node, modules, "sse")
		_, port, _ := net.SplitHostPort(addr)
		ports = append(ports, port)
		ups = append(ups, "--upstream", "http://"+addr+"/mcp") // sse_url: the default, http://addr/sse
	}
	secret := writeSecret(t)
	var gws, admins []string
	for range 2 {
		gw, admin := testproc.FreeAddr(t), testproc.FreeAddr(t)
		startProcess(t, append([]string{"serve", "--listen", gw, "--admin", admin, "--secret-file", secret}, ups...)...)
		testproc.WaitReady(t, "http://"+gw+"/readyz")
		gws, admins = append(gws, gw), append(admins, admin)
	}

	script := nodeScript(t, modules, "sse2024-client.mjs")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, node, script, "http://"+gws[0], "http://"+gws[1], "20")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("client: %v\n%s", err, stderr.String())
	}
	var res struct {
		OK       int      `json:"ok"`
		Failures []string `json:"failures"`
		Posts    []int    `json:"posts"`
		Endpoint string   `json:"endpoint"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("client said %q: %v", out, err)
	}
	t.Logf("calls ok %d of 20; POSTs through gateway A %d, B %d", res.OK, res.Posts[0], res.Posts[1])
	if res.OK != 20 || len(res.Failures) > 0 {
		t.Errorf("%d of 20 calls succeeded: %v", res.OK, res.Failures)
	}
	if res.Posts[0] < 10 || res.Posts[1] < 10 {
		t.Errorf("POSTs by gateway %v: want both used", res.Posts)
	}
	if !strings.HasPrefix(res.Endpoint, "/messages?sessionId=") {
		t.Errorf("endpoint %q is not the gateway's", res.Endpoint)
	}
	for _, port := range ports {
		if strings.Contains(res.Endpoint, port) {
			t.Errorf("endpoint %q names replica port %s", res.Endpoint, port)
		}
	}
	byReplica := map[string]int{}
	for _, admin := range admins {
		for replica, n := range sseCalls(t, "http://"+admin+"/metrics") {
			byReplica[replica] += n
		}
	}
	t.Logf("tools/call with era 2024-11-05, by replica over both gateways: %v", byReplica)
	if len(byReplica) != 1 {
		t.Errorf("the session's calls reached %d replicas: %v", len(byReplica), byReplica)
	}
	for _, n := range byReplica {
		if n != 20 {
			t.Errorf("%d tools/call counted with era 2024-11-05, want 20", n)
		}
	}
}

var sseCallLine = regexp.MustCompile(`^mcpfleet_requests_total\{era="2024-11-05",method="tools/call",outcome="ok",replica="([^"]+)"\} (\d+)$`)

// sseCalls reads a gateway's metrics: its 2024-11-05 tools/call by replica.
func sseCalls(t *testing.T, u string) map[string]int {
	t.Helper()
	_, metrics := probeStatus(t, u)
	calls := map[string]int{}
	for _, line := range strings.Split(metrics, "\n") {
		if m := sseCallLine.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[2])
			calls[m[1]] += n
		}
	}
	return calls
}

package main

import (
	"crypto/ecdsa"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"

	"github.com/mcpfleet/mcpfleet/internal/testproc"
)

// authzRules are the worked example's rules as a config file writes them.
const authzRules = `authz:
  rules:
    - name: mutate-needs-write
      match: 'mcp.tool == "mutate" && !("mcp:write" in caller.scopes)'
      effect: deny
      scopes: [mcp:write]
    - name: restart-oncall
      match: 'mcp.tool.startsWith("restart_") && "oncall" in jwt.groups'
      effect: allow
    - name: restart-others
      match: 'mcp.tool.startsWith("restart_")'
      effect: deny
`

// TestServeAuthorizes: `serve` with JWT verification and the example
// rules in front of three replicas: an mcp:read token lists neither mutate
// nor restart_now, and its mutate is 403 with the scope challenge; an
// mcp:write token runs mutate, an on-call token restart_now. A SIGHUP with
// a rule that does not compile is refused, naming the rule and its line,
// and the running rules stay; such a file does not start at all.
func TestServeAuthorizes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	k, keys := writeJWKS(t)
	ups := startRestartReplicas(t)
	gw := testproc.FreeAddr(t)
	base := "listen: " + gw + "\nupstreams: [" + ups + "]\n" +
		"auth: {jwks_file: '" + keys + "', issuers: ['https://idp'], audiences: [mcp]}\n"
	cfgPath := filepath.Join(t.TempDir(), "mcpfleet.yaml")
	write := func(body string) {
		if err := os.WriteFile(cfgPath, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(base + authzRules)
	logs := startGatewayLogged(t, gw, "serve", "--config", cfgPath)
	read, write2 := scopedToken(k, "mcp:read"), scopedToken(k, "mcp:write")
	checkReadDenied(t, gw, read)
	if code, _ := callAs(t, gw, write2, "mutate", `{"key":"k"}`); code != http.StatusOK {
		t.Errorf("a write token's mutate: %d", code)
	}
	if code, _ := callAs(t, gw, scopedToken(k, "mcp:read", "oncall"), "restart_now", `{}`); code != http.StatusOK {
		t.Errorf("an on-call token's restart_now: %d", code)
	}
	if code, _ := callAs(t, gw, read, "restart_now", `{}`); code != http.StatusForbidden {
		t.Errorf("a read token's restart_now: %d, want 403", code)
	}
	broken := strings.Replace(authzRules, `"oncall" in jwt.groups`, `"oncall" in jwt.groups && caller.subjet == "x"`, 1)
	write(base + broken)
	line := strings.Count(base, "\n") + 8 // the second rule's match: authz, rules, four lines of the first, the name
	logs.cmd.Process.Signal(syscall.SIGHUP)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), "reload refused"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the gateway never said it refused the reload")
		}
	}
	if s := logs.String(); !strings.Contains(s, `rule \"restart-oncall\"`) || !strings.Contains(s, "line "+strconv.Itoa(line)+": authz.rules[1].match") || !strings.Contains(s, "subjet") {
		t.Errorf("the refusal does not name the rule, its line %d and the field:\n%s", line, s)
	}
	checkReadDenied(t, gw, read) // the running rules stay
	code, _, stderr := runCmd(t, t.Context(), "serve", "--config", cfgPath)
	if code != 2 || !strings.Contains(stderr, "line "+strconv.Itoa(line)+": authz.rules[1].match: rule \"restart-oncall\"") {
		t.Errorf("serve with a bad rule: exit %d, %s", code, stderr)
	}
}

// checkReadDenied checks what an mcp:read token may not do.
func checkReadDenied(t *testing.T, gw, read string) {
	t.Helper()
	code, h := callAs(t, gw, read, "mutate", `{"key":"k"}`)
	if c := h.Get("WWW-Authenticate"); code != http.StatusForbidden || !strings.Contains(c, `error="insufficient_scope", scope="mcp:write"`) {
		t.Errorf("a read token's mutate: %d, challenge %q", code, c)
	}
	resp, err := post2026(gw, "tools/list", "", "", 2, map[string]string{"Authorization": "Bearer " + read})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"echo"`) || strings.Contains(string(b), `"mutate"`) || strings.Contains(string(b), `"restart_now"`) {
		t.Errorf("a read token's tools/list: %s", b)
	}
}

// callAs calls tool as token and returns the status and headers.
func callAs(t *testing.T, gw, token, tool, args string) (int, http.Header) {
	t.Helper()
	resp, err := post2026(gw, "tools/call", tool, `"name":"`+tool+`","arguments":`+args, 1, map[string]string{"Authorization": "Bearer " + token})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK && strings.Contains(string(b), `"isError":true`) {
		t.Errorf("%s: %s", tool, b)
	}
	return resp.StatusCode, resp.Header
}

// scopedToken is alice's token from https://idp for mcp with scope and,
// when given, groups.
func scopedToken(k *ecdsa.PrivateKey, scope string, groups ...string) string {
	s, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: k}, (&jose.SignerOptions{}).WithHeader("kid", "k"))
	now := time.Now()
	extra := map[string]any{"scope": scope}
	if len(groups) > 0 {
		extra["groups"] = groups
	}
	tok, _ := josejwt.Signed(s).Claims(josejwt.Claims{Issuer: "https://idp", Subject: "alice", Audience: josejwt.Audience{"mcp"},
		IssuedAt: josejwt.NewNumericDate(now), Expiry: josejwt.NewNumericDate(now.Add(time.Hour))}).Claims(extra).Serialize()
	return tok
}

// startGatewayLogged is startLogged for a gateway at gw, once its
// /readyz answers; its log is shown when the test failed.
func startGatewayLogged(t *testing.T, gw string, args ...string) loggedProcess {
	t.Helper()
	p := startLogged(t, args...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("gateway log:\n%s", p.String())
		}
	})
	testproc.WaitReady(t, "http://"+gw+"/readyz")
	return p
}

// TestServeAuthorizesTypeScript: the official TypeScript SDK client, in a
// 2025-11-25 session through `serve` with the example rules: an mcp:read
// token's tool list has neither mutate nor restart_now, and its call of
// mutate fails with the 403 scope challenge; an mcp:write token sees
// mutate and runs it.
func TestServeAuthorizesTypeScript(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	node, modules := nodeTools(t)
	k, keys := writeJWKS(t)
	ups := startRestartReplicas(t)
	gw := testproc.FreeAddr(t)
	cfgPath := filepath.Join(t.TempDir(), "mcpfleet.yaml")
	cfg := "listen: " + gw + "\nupstreams: [" + ups + "]\n" +
		"auth: {jwks_file: '" + keys + "', issuers: ['https://idp'], audiences: [mcp]}\n" + authzRules
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	startGatewayLogged(t, gw, "serve", "--config", cfgPath)
	script := nodeScript(t, modules, "authz-client.mjs")
	type outcome struct {
		Tools []string `json:"tools"`
		Call  struct {
			Result *struct {
				IsError bool `json:"isError"`
			} `json:"result"`
			Error *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
			Challenge string `json:"challenge"`
		} `json:"call"`
	}
	run := func(token string) outcome {
		t.Helper()
		var stderr strings.Builder
		cmd := exec.CommandContext(t.Context(), node, script, "http://"+gw+"/mcp", token, "mutate")
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("client: %v\n%s", err, stderr.String())
		}
		var o outcome
		if err := json.Unmarshal(out, &o); err != nil {
			t.Fatalf("client said %q: %v", out, err)
		}
		return o
	}
	read := run(scopedToken(k, "mcp:read"))
	t.Logf("mcp:read: tools %v, call %+v", read.Tools, read.Call)
	if slices.Contains(read.Tools, "mutate") || slices.Contains(read.Tools, "restart_now") || !slices.Contains(read.Tools, "echo") {
		t.Errorf("an mcp:read token's list: %v", read.Tools)
	}
	if e := read.Call.Error; e == nil || e.Code != http.StatusForbidden || !strings.Contains(read.Call.Challenge, `error="insufficient_scope", scope="mcp:write"`) {
		t.Errorf("an mcp:read token's mutate: %+v", read.Call)
	}
	write := run(scopedToken(k, "mcp:write"))
	if !slices.Contains(write.Tools, "mutate") || write.Call.Result == nil || write.Call.Result.IsError {
		t.Errorf("an mcp:write token: tools %v, call %+v", write.Tools, write.Call)
	}
}

// startRestartReplicas starts replicas a, b and c with the tool
// restart_now, and returns them as a YAML flow list's items.
func startRestartReplicas(t *testing.T) string {
	t.Helper()
	var ups []string
	for _, name := range []string{"a", "b", "c"} {
		addr := testproc.FreeAddr(t)
		startReplica(t, name, addr, "--add-tool", "restart_now")
		ups = append(ups, "{name: "+name+", url: 'http://"+addr+"/mcp'}")
	}
	return strings.Join(ups, ", ")
}

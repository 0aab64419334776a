package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeAuditFile: `serve` with audit.log naming a file appends one
// line per tools/call there, naming the tool, the caller by its digest and
// (with audit.include_subject) the verified sub, and holding no token, no
// argument and no result; a tools/list gets none.
func TestServeAuditFile(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	k, keys := writeJWKS(t)
	_, ups := limitsFleet(t)
	file := filepath.Join(t.TempDir(), "audit.log")
	gws, _ := startGateways(t, 1, ups+"auth: {jwks_file: '"+keys+"', issuers: ['https://idp'], audiences: [mcp]}\n"+
		"audit: {log: '"+file+"', include_subject: true}\n")
	tok := signToken(k, "mcp")
	const arg = "ARG-5e0f"
	for i, call := range []struct{ method, tool, params string }{
		{"tools/call", "echo", `"name":"echo","arguments":{"text":"` + arg + `"}`},
		{"tools/list", "", ""},
		{"tools/call", "whoami", `"name":"whoami","arguments":{}`},
	} {
		resp, err := post2026(gws[0], call.method, call.tool, call.params, i+1, map[string]string{"Authorization": "Bearer " + tok})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", call.method, resp.StatusCode, b)
		}
	}
	var text string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(file) // written by the log's goroutine, every 10 ms at most
		if text = string(b); strings.Count(text, "\n") >= 2 {
			break
		}
	}
	if strings.Contains(text, tok) || strings.Contains(text, arg) || strings.Contains(text, "Bearer") {
		t.Errorf("the audit file holds the token, the argument or its echo:\n%s", text)
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d audit lines, want 2 (the calls):\n%s", len(lines), text)
	}
	for i, tool := range []string{"echo", "whoami"} {
		var l map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &l); err != nil {
			t.Fatalf("line %d: %v: %s", i, err, lines[i])
		}
		if l["msg"] != "audit" || l["method"] != "tools/call" || l["tool"] != tool || l["sub"] != "alice" ||
			l["outcome"] != "ok" || l["caller"] == "" || l["caller"] == nil {
			t.Errorf("line %d: %v, want alice's tools/call of %s", i, l, tool)
		}
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the audit file: %v %v, want mode 0600", fi.Mode(), err)
	}
}

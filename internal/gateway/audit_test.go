package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	josejwt "github.com/go-jose/go-jose/v4/jwt"
	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
	"github.com/mcpfleet/mcpfleet/internal/testserver"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// auditLines decodes the audit log's lines, each a JSON object.
func auditLines(t *testing.T, text string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("an audit line that is not JSON: %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// TestAuditLog: a tools/call, a prompts/get and a resources/read each get
// one line naming the caller by its digest (the same for two tokens of one
// subject, another for another subject), the method and the name, the
// replica, outcome and duration; a list gets none; sub appears only with
// AuditSubject; no token, argument or result appears.
func TestAuditLog(t *testing.T) {
	for _, withSub := range []bool{false, true} {
		t.Run(fmt.Sprintf("include_subject=%v", withSub), func(t *testing.T) {
			auditOf(t, withSub)
		})
	}
}

func auditOf(t *testing.T, withSub bool) {
	idp := newIssuer(t, "k1")
	v := verifier(t, idp)
	s, _ := testserver.New("a", nil)
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	audit := &syncBuffer{}
	gw := startGatewayOn(t, []upstream.Spec{{Name: "a", URL: hs.URL + "/mcp"}},
		&Options{Auth: v, Audit: audit, AuditSubject: withSub, Service: "billing"}, io.Discard)
	front := newFront(gw)
	t.Cleanup(front.Close)
	r := newRaw(t, front.URL+"/mcp", "2026-07-28")
	token := func(sub string) string {
		now := time.Now()
		return idp.token(t, josejwt.Claims{Issuer: "https://idp", Subject: sub, Audience: josejwt.Audience{"mcp"},
			Expiry: josejwt.NewNumericDate(now.Add(time.Hour)), IssuedAt: josejwt.NewNumericDate(now), ID: fmt.Sprint(now.UnixNano())})
	}
	const arg = "ARGUMENT-b41c"
	var tokens []string
	send := func(sub, method string, params map[string]any) {
		tok := token(sub)
		tokens = append(tokens, tok)
		hdr := map[string]string{"Authorization": "Bearer " + tok}
		if uri, ok := params["uri"].(string); ok {
			hdr["Mcp-Name"] = uri
		}
		resp := r.post(context.Background(), 1, method, params, hdr)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", method, resp.StatusCode, b)
		}
	}
	send("alice", "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": arg}})
	send("alice", "tools/list", nil)
	send("alice", "prompts/get", map[string]any{"name": "greet", "arguments": map[string]any{"name": arg}})
	send("bob", "resources/read", map[string]any{"uri": testserver.CatalogURI})

	text := audit.String()
	for _, secret := range append(tokens, arg, "Hello", `"text"`) {
		if strings.Contains(text, secret) {
			t.Errorf("the audit log holds %q:\n%s", secret, text)
		}
	}
	lines := auditLines(t, text)
	if len(lines) != 3 {
		t.Fatalf("%d audit lines, want 3 (no tools/list):\n%s", len(lines), text)
	}
	want := []struct{ method, key, name string }{{"tools/call", "tool", "echo"}, {"prompts/get", "prompt", "greet"}, {"resources/read", "resource", testserver.CatalogURI}}
	for i, w := range want {
		l := lines[i]
		if l["msg"] != "audit" || l["service"] != "billing" || l["method"] != w.method || l[w.key] != w.name ||
			l["replica"] != "a" || l["outcome"] != "ok" || l["status"] != 200.0 || l["decision"] != "" || l["rule"] != "" {
			t.Errorf("line %d: %v, want %s of %s %q at replica a", i, l, w.method, w.key, w.name)
		}
		if d, ok := l["duration_ms"].(float64); !ok || d <= 0 {
			t.Errorf("line %d: duration_ms %v", i, l["duration_ms"])
		}
		sub, has := l["sub"]
		if has != withSub || withSub && sub != map[bool]string{true: "bob", false: "alice"}[i == 2] {
			t.Errorf("line %d: sub %v (present %v), want present %v", i, sub, has, withSub)
		}
	}
	alice, bob := lines[0]["caller"], lines[2]["caller"]
	if c, _ := alice.(string); c == "" || lines[1]["caller"] != alice || bob == alice {
		t.Errorf("callers %v %v %v: want alice's two tokens one digest, bob another", alice, lines[1]["caller"], bob)
	}
}

// TestAuditDecisions: once authorization has decided a request, each of
// its messages gets a line whatever its method, with the decision and the
// rule; a batch's audited calls get one line each.
func TestAuditDecisions(t *testing.T) {
	audit := &syncBuffer{}
	f := startFleet(t, 1, &Options{Audit: audit})
	g := f.gw
	rec := g.begin(httptest.NewRequest("POST", "/mcp", nil))
	rec.q = &request{msg: mcpmsg.Message{Method: "tools/list"}}
	rec.authzDecision, rec.authzRule = "deny", "read-only"
	rec.reject(httptest.NewRecorder(), &mcpmsg.Error{Status: 403, Code: -32600, Message: "denied"}, nil)
	g.audit(rec)

	rec = g.begin(httptest.NewRequest("POST", "/mcp", nil))
	rec.q = &request{batch: []mcpmsg.Message{{Method: "tools/call", Name: "a\"b"}, {Method: "ping"}, {Method: "tools/call", Name: "c\xff"}}}
	rec.replica, rec.status = "replica-a", 200
	g.audit(rec)

	lines := auditLines(t, audit.String())
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3:\n%s", len(lines), audit.String())
	}
	if l := lines[0]; l["method"] != "tools/list" || l["decision"] != "deny" || l["rule"] != "read-only" ||
		l["outcome"] != "rejected" || l["status"] != 403.0 || l["replica"] != "none" || l["tool"] != nil {
		t.Errorf("the decision's line: %v", l)
	}
	if lines[1]["tool"] != `a"b` || lines[2]["tool"] != "c\uFFFD" || lines[1]["replica"] != "replica-a" {
		t.Errorf("the batch's lines: %v %v", lines[1], lines[2])
	}
}

// BenchmarkAuditLine: one audit line put together, as a tools/call's is.
func BenchmarkAuditLine(b *testing.B) {
	l := auditLine{service: "github", caller: "9c1e5f0a7b2d4e61", sub: "alice", method: "tools/call", nameKey: "tool",
		name: "delete_branch", decision: "allow", rule: "oncall", replica: "10.0.0.12:3000", outcome: "ok", status: 200, durationMS: 41.7}
	now := time.Now()
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		buf = l.appendJSON(buf[:0], now)
	}
}

// TestAuditLegacyMessages: a tools/call POSTed to a 2024-11-05 session's
// endpoint gets its audit line too, naming the session's replica.
func TestAuditLegacyMessages(t *testing.T) {
	_, specs := startSSEReplicas(t, 1)
	opts := sharedSecretOptions(t)
	audit := &syncBuffer{}
	opts.Audit = audit
	_, fronts, _ := startGateways(t, 1, specs, opts)
	_, endpoint, _ := sseOpen(t, fronts[0].URL)
	if code, body := ssePost(t, fronts[0].URL, endpoint, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`); code != 202 {
		t.Fatalf("POST: %d %s", code, body)
	}
	var lines []map[string]any
	for deadline := time.Now().Add(5 * time.Second); len(lines) == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		lines = auditLines(t, audit.String()) // written when the POST's answer ended
	}
	if len(lines) != 1 || lines[0]["tool"] != "whoami" || lines[0]["replica"] != specs[0].Name {
		t.Errorf("audit lines %v, want the whoami call at %s", lines, specs[0].Name)
	}
}

package gateway

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestNoCredentialInLogsOrMetrics sends credentials and a session ID through
// every path (success, 404, 413, header mismatch) and checks that none of
// them reaches a log line, an audit line, a metric, a span or an error
// answer, and that no call's argument reaches the audit log.
func TestNoCredentialInLogsOrMetrics(t *testing.T) {
	const secret = "sk-SECRET-7f3a9c"
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	audit := &syncBuffer{}
	f := startFleet(t, 2, &Options{Tracer: tp.Tracer("test"), Audit: audit})
	auth := map[string]string{"Authorization": "Bearer " + secret, "Private-Token": secret}
	var answers strings.Builder
	keep := func(b io.ReadCloser) {
		x, _ := io.ReadAll(b)
		b.Close()
		answers.Write(x)
	}
	legacy := newRaw(t, f.url(), "2025-11-25")
	legacy.initialize()
	session := legacy.session
	keep(legacy.post(context.Background(), 2, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}}, auth).Body)
	legacy.session = secret // a credential in the session header, too
	keep(legacy.post(context.Background(), 3, "tools/list", nil, auth).Body)
	modern := newRaw(t, f.url(), "2026-07-28")
	keep(modern.post(context.Background(), 4, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}}, auth).Body)
	// An argument, and so the result that echoes it, stay out of the audit log.
	keep(modern.post(context.Background(), 7, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "ARG-8d1e"}}, auth).Body)
	keep(modern.post(context.Background(), 5, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}},
		map[string]string{"Authorization": "Bearer " + secret, "Mcp-Name": secret}).Body)

	// A JWT's claims route but never show either.
	keep(modern.post(context.Background(), 6, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}},
		map[string]string{"Authorization": "Bearer " + jwt("https://issuer", secret, 1)}).Body)
	// The sealed session ID holds the replica and its session, nothing of the caller.
	claims, err := f.gw.keys.Open(session)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(session+claims.Replica+claims.SessionID, secret) {
		t.Error("the credential appears in the sealed session ID")
	}

	rec := httptest.NewRecorder()
	f.gw.Metrics().Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	metrics := rec.Body.String()
	if !strings.Contains(metrics, `mcpfleet_requests_total{era="2026-07-28",method="tools/call"`) {
		t.Fatalf("metrics lack the requests counter:\n%s", metrics)
	}
	if len(spans.Ended()) < 6 {
		t.Fatalf("%d spans recorded, want one per request at least", len(spans.Ended()))
	}
	noLeaks(t, spans, secret, session, claims.SessionID)
	if strings.Contains(audit.String(), "ARG-") {
		t.Error("a call's argument or result appears in the audit log")
	}
	if !strings.Contains(audit.String(), `"tool":"echo"`) {
		t.Errorf("no audit line for the echo call:\n%s", audit.String())
	}
	for what, text := range map[string]string{"logs": f.logs.String(), "audit": audit.String(), "metrics": metrics, "answers": answers.String()} {
		if strings.Contains(text, secret) {
			t.Errorf("the credential appears in the %s", what)
		}
		if strings.Contains(text, session) || strings.Contains(text, claims.SessionID) {
			t.Errorf("a session ID appears in the %s", what)
		}
	}
	if !strings.Contains(f.logs.String(), `"msg":"request"`) {
		t.Error("no access log lines were written")
	}
}

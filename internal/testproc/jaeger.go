package testproc

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Jaeger is a running Jaeger all-in-one (Jaeger v2: an OpenTelemetry
// Collector with Jaeger's storage and query extensions), its memory
// storage fed by its OTLP receivers, every port on loopback.
type Jaeger struct {
	OTLPHTTP string // the OTLP/HTTP base URL, http://127.0.0.1:port
	OTLPGRPC string // the OTLP/gRPC address, 127.0.0.1:port
	QueryURL string // Jaeger's query API and UI, http://127.0.0.1:port
}

// jaegerConfig is the all-in-one's configuration: OTLP in, memory storage,
// the query API; no other receiver, no admin or telemetry port.
const jaegerConfig = `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: %s
    grpc:
      endpoint: %s
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 10000
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %s
      http:
        endpoint: %s
processors:
  batch:
    timeout: 100ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`

// StartJaeger runs the Jaeger binary that MCPFLEET_JAEGER names
// (scripts/lib/jaeger.sh builds it from the Go module proxy) until the test
// ends. Without it the test skips, or fails when MCPFLEET_REQUIRE_JAEGER is
// 1 (scripts/test.sh sets both for the tracing step).
func StartJaeger(t testing.TB) *Jaeger {
	t.Helper()
	bin := os.Getenv("MCPFLEET_JAEGER")
	if bin == "" {
		msg := "MCPFLEET_JAEGER is not set (scripts/lib/jaeger.sh builds Jaeger and prints its path)"
		if os.Getenv("MCPFLEET_REQUIRE_JAEGER") == "1" {
			t.Fatal(msg + ", and MCPFLEET_REQUIRE_JAEGER=1")
		}
		t.Skip(msg)
	}
	query, queryGRPC, grpcAddr, httpAddr := FreeAddr(t), FreeAddr(t), FreeAddr(t), FreeAddr(t)
	cfg := filepath.Join(t.TempDir(), "jaeger.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, jaegerConfig, query, queryGRPC, grpcAddr, httpAddr), 0o600); err != nil {
		t.Fatal(err)
	}
	Start(t, bin, "--config", "file:"+cfg)
	j := &Jaeger{OTLPHTTP: "http://" + httpAddr, OTLPGRPC: grpcAddr, QueryURL: "http://" + query}
	WaitReady(t, j.QueryURL+"/api/services")
	// The OTLP receiver answers an empty export once it listens.
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Post(j.OTLPHTTP+"/v1/traces", "application/json", strings.NewReader(`{"resourceSpans":[]}`))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("Jaeger's OTLP/HTTP receiver at %s not ready: %v", j.OTLPHTTP, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return j
}

// Span is one span as Jaeger's query API shows it.
type Span struct {
	TraceID, SpanID, ParentSpanID string
	OperationName, ServiceName    string
	Kind                          string            // the span.kind tag: server, client, internal...
	Attributes                    map[string]string // every tag, its value as text
	Events                        []Event
}

// Event is a span event (a log in Jaeger's model).
type Event struct {
	Name       string
	Attributes map[string]string
}

// queryTrace is the JSON of Jaeger's query API (/api/traces), the parts
// read here.
type queryTrace struct {
	Spans []struct {
		TraceID       string `json:"traceID"`
		SpanID        string `json:"spanID"`
		OperationName string `json:"operationName"`
		ProcessID     string `json:"processID"`
		References    []struct {
			RefType string `json:"refType"`
			SpanID  string `json:"spanID"`
		} `json:"references"`
		Tags []keyValue `json:"tags"`
		Logs []struct {
			Fields []keyValue `json:"fields"`
		} `json:"logs"`
	} `json:"spans"`
	Processes map[string]struct {
		ServiceName string `json:"serviceName"`
	} `json:"processes"`
}

type keyValue struct {
	Key   string `json:"key"`
	Value any    `json:"value"`
}

func tags(kvs []keyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = fmt.Sprint(kv.Value)
	}
	return m
}

// Trace returns the spans of one trace (hex ID) as Jaeger stores them;
// none, and no error, while Jaeger has none of it.
func (j *Jaeger) Trace(ctx context.Context, traceID string) ([]Span, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, j.QueryURL+"/api/traces/"+traceID, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil, nil
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("jaeger query: status %d %s: %v", resp.StatusCode, b, err)
	}
	var out struct {
		Data []queryTrace `json:"data"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("jaeger query: %w", err)
	}
	var spans []Span
	for _, tr := range out.Data {
		for _, s := range tr.Spans {
			sp := Span{TraceID: s.TraceID, SpanID: s.SpanID, OperationName: s.OperationName,
				ServiceName: tr.Processes[s.ProcessID].ServiceName, Attributes: tags(s.Tags)}
			sp.Kind = sp.Attributes["span.kind"]
			for _, r := range s.References {
				if r.RefType == "CHILD_OF" {
					sp.ParentSpanID = r.SpanID
				}
			}
			for _, l := range s.Logs {
				f := tags(l.Fields)
				sp.Events = append(sp.Events, Event{Name: f["event"], Attributes: f})
			}
			spans = append(spans, sp)
		}
	}
	return spans, nil
}

// WaitForTrace asks Jaeger for a trace until pred holds of its spans
// (export is asynchronous), or ctx ends: then it returns the last spans
// seen and an error that lists them.
func (j *Jaeger) WaitForTrace(ctx context.Context, traceID string, pred func([]Span) bool) ([]Span, error) {
	var last []Span
	for {
		spans, err := j.Trace(ctx, traceID)
		if err == nil {
			last = spans
			if pred(spans) {
				return spans, nil
			}
		}
		select {
		case <-ctx.Done():
			var b strings.Builder
			for _, s := range last {
				fmt.Fprintf(&b, "\n  %s %s %q kind=%s parent=%s %v", s.ServiceName, s.SpanID, s.OperationName, s.Kind, s.ParentSpanID, s.Attributes)
			}
			return last, fmt.Errorf("trace %s not as wanted (%v); %d spans:%s", traceID, ctx.Err(), len(last), b.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Dump returns the raw JSON of every trace Jaeger holds of a service, for
// a test that looks for what must never be in one.
func (j *Jaeger) Dump(ctx context.Context, service string) (string, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, j.QueryURL+"/api/traces?limit=1000&lookback=1h&service="+service, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("jaeger query: status %d: %v", resp.StatusCode, err)
	}
	return string(b), nil
}

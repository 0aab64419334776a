package telemetry

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
	semconv "go.opentelemetry.io/otel/semconv/v1.39.0"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestOn(t *testing.T) {
	for _, c := range []struct {
		name     string
		endpoint string
		env      map[string]string
		want     bool
	}{
		{"nothing set", "", nil, false},
		{"the key", "http://127.0.0.1:4318", nil, true},
		{"the environment", "", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, true},
		{"traces' own endpoint", "", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, true},
		{"exporter none", "", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}, false},
		{"sdk disabled beats the key", "http://127.0.0.1:4318", map[string]string{"OTEL_SDK_DISABLED": "true"}, false},
	} {
		if got := On(Config{Endpoint: c.endpoint}, env(c.env)); got != c.want {
			t.Errorf("%s: On = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestCheckEndpoint(t *testing.T) {
	for _, ok := range []string{"http://127.0.0.1:4318", "https://otel.example:4318/", "http://[::1]:4317"} {
		if err := CheckEndpoint(ok); err != nil {
			t.Errorf("%s refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"127.0.0.1:4318", "grpc://c:4317", "http://", "http://u:secret@c:4318", "http://c:4318?k=v", "http://c:4318#f"} {
		err := CheckEndpoint(bad)
		if err == nil {
			t.Errorf("%s accepted", bad)
		} else if bad == "http://u:secret@c:4318" && strings.Contains(err.Error(), "secret") {
			t.Errorf("the error quotes the credential: %v", err)
		}
	}
}

func TestServiceName(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
		env  map[string]string
		want string
	}{
		{"default", Config{Default: "mcpfleet"}, nil, "mcpfleet"},
		{"OTEL_SERVICE_NAME", Config{Default: "mcpfleet"}, map[string]string{"OTEL_SERVICE_NAME": "edge"}, "edge"},
		{"the key wins", Config{ServiceName: "gw", Default: "mcpfleet"}, map[string]string{"OTEL_SERVICE_NAME": "edge"}, "gw"},
	} {
		for k, v := range c.env {
			t.Setenv(k, v) // resource.WithFromEnv reads the process's environment
		}
		res, err := newResource(context.Background(), c.cfg, env(c.env))
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if v, ok := res.Set().Value(semconv.ServiceNameKey); ok {
			got = v.AsString()
		}
		if got != c.want {
			t.Errorf("%s: service.name %q, want %q", c.name, got, c.want)
		}
	}
}

// TestExtractPrefersMeta: params._meta's parent wins over the header's,
// and a tracestate never crosses from one source to the other.
func TestExtractPrefersMeta(t *testing.T) {
	const (
		metaParent   = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
		headerParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	)
	h := http.Header{"Traceparent": {headerParent}, "Tracestate": {"h=1"}}
	sc := trace.SpanContextFromContext(Extract(context.Background(), h, mcpmsg.TraceMeta{Traceparent: metaParent}))
	if sc.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" || sc.TraceState().Len() != 0 {
		t.Errorf("extracted %s state %q, want _meta's parent with no state", sc.TraceID(), sc.TraceState().String())
	}
	sc = trace.SpanContextFromContext(Extract(context.Background(), h, mcpmsg.TraceMeta{}))
	if sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || sc.TraceState().String() != "h=1" {
		t.Errorf("extracted %s state %q, want the header's", sc.TraceID(), sc.TraceState().String())
	}
}

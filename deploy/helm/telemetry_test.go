package helm

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/config"
	corev1 "k8s.io/api/core/v1"
)

// telemetryKeys returns the keys of the rendered configuration's telemetry
// section, sorted; nil when there is none.
func telemetryKeys(t *testing.T, g gateway) []string {
	t.Helper()
	v, ok := topLevel(t, g)["telemetry"]
	if !ok {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("telemetry is %T, want a map", v)
	}
	return slices.Sorted(maps.Keys(m))
}

// envOf returns the gateway container's environment by name.
func envOf(g gateway) map[string]corev1.EnvVar {
	out := map[string]corev1.EnvVar{}
	for _, e := range g.c.Env {
		out[e.Name] = e
	}
	return out
}

// TestTelemetry renders gateway.telemetry and gateway.extraEnv and checks
// the configuration as serve's own parser reads it (gatewayOf): the values
// set, and only those, under telemetry at the top level, where serve takes
// it (a process key, not a service's); the environment as EnvVars, a
// Secret's key among them.
func TestTelemetry(t *testing.T) {
	ratio := func(f float64) *float64 { return &f }
	for _, tc := range []struct {
		name  string
		opts  renderOptions
		want  config.Telemetry
		keys  []string
		check func(t *testing.T, g gateway)
	}{
		{"every value, the credential from a Secret", renderOptions{files: []string{"telemetry.yaml"}},
			config.Telemetry{OTLPEndpoint: "http://otel-collector.observability:4318", Protocol: "http/protobuf", SampleRatio: ratio(0.25), ServiceName: "mcpfleet-edge"},
			[]string{"otlp_endpoint", "protocol", "sample_ratio", "service_name"},
			func(t *testing.T, g gateway) {
				env := envOf(g)
				h := env["OTEL_EXPORTER_OTLP_HEADERS"]
				if h.Value != "" || h.ValueFrom == nil || h.ValueFrom.SecretKeyRef == nil ||
					h.ValueFrom.SecretKeyRef.Name != "otel-collector-auth" || h.ValueFrom.SecretKeyRef.Key != "headers" {
					t.Errorf("OTEL_EXPORTER_OTLP_HEADERS %+v, want Secret otel-collector-auth key headers", h)
				}
				if p := env["K8S_POD_NAME"]; p.ValueFrom == nil || p.ValueFrom.FieldRef == nil || p.ValueFrom.FieldRef.FieldPath != "metadata.name" {
					t.Errorf("K8S_POD_NAME %+v, want the pod's name from the downward API", p)
				}
				if a := env["OTEL_RESOURCE_ATTRIBUTES"].Value; a != "k8s.pod.name=$(K8S_POD_NAME)" {
					t.Errorf("OTEL_RESOURCE_ATTRIBUTES %q", a)
				}
				if i, j := slices.IndexFunc(g.c.Env, func(e corev1.EnvVar) bool { return e.Name == "K8S_POD_NAME" }),
					slices.IndexFunc(g.c.Env, func(e corev1.EnvVar) bool { return e.Name == "OTEL_RESOURCE_ATTRIBUTES" }); i > j {
					t.Errorf("extraEnv reordered: $(K8S_POD_NAME) expands only after its definition")
				}
			}},
		{"an endpoint alone, over gRPC", renderOptions{set: map[string]any{"gateway": map[string]any{"telemetry": map[string]any{
			"otlpEndpoint": "http://tempo.observability:4317", "protocol": "grpc"}}}},
			config.Telemetry{OTLPEndpoint: "http://tempo.observability:4317", Protocol: "grpc"},
			[]string{"otlp_endpoint", "protocol"}, nil},
		{"a sample ratio of 0 is written", renderOptions{set: map[string]any{"gateway": map[string]any{"telemetry": map[string]any{
			"otlpEndpoint": "http://otel-collector.observability:4318", "sampleRatio": 0}}}},
			config.Telemetry{OTLPEndpoint: "http://otel-collector.observability:4318", SampleRatio: ratio(0)},
			[]string{"otlp_endpoint", "sample_ratio"}, nil},
		{"a sample ratio of 1 from --set", renderOptions{set: map[string]any{"gateway": map[string]any{"telemetry": map[string]any{
			"sampleRatio": int64(1)}}}}, // --set's integer
			config.Telemetry{SampleRatio: ratio(1)},
			[]string{"sample_ratio"}, nil},
		{"a sample ratio set to null", renderOptions{files: []string{"telemetry.yaml"}, set: map[string]any{"gateway": map[string]any{"telemetry": map[string]any{
			"sampleRatio": nil}}}}, // --set gateway.telemetry.sampleRatio=null: Helm removes the key
			config.Telemetry{OTLPEndpoint: "http://otel-collector.observability:4318", Protocol: "http/protobuf", ServiceName: "mcpfleet-edge"},
			[]string{"otlp_endpoint", "protocol", "service_name"}, nil},
		{"the environment alone", renderOptions{set: map[string]any{"gateway": map[string]any{"extraEnv": []any{
			map[string]any{"name": "OTEL_EXPORTER_OTLP_ENDPOINT", "value": "http://otel-collector.observability:4318"}}}}},
			config.Telemetry{}, nil,
			func(t *testing.T, g gateway) {
				if e := envOf(g)["OTEL_EXPORTER_OTLP_ENDPOINT"]; e.Value != "http://otel-collector.observability:4318" {
					t.Errorf("OTEL_EXPORTER_OTLP_ENDPOINT %+v", e)
				}
			}},
		{"with services, at the top level", renderOptions{files: []string{"services.yaml", "telemetry.yaml"}},
			config.Telemetry{OTLPEndpoint: "http://otel-collector.observability:4318", Protocol: "http/protobuf", SampleRatio: ratio(0.25), ServiceName: "mcpfleet-edge"},
			[]string{"otlp_endpoint", "protocol", "sample_ratio", "service_name"},
			func(t *testing.T, g gateway) {
				services, _ := topLevel(t, g)["services"].([]any)
				if len(services) != 3 {
					t.Fatalf("%d services, want services.yaml's 3", len(services))
				}
				for i, s := range services {
					if _, ok := s.(map[string]any)["telemetry"]; ok {
						t.Errorf("services[%d] has telemetry: a process key, which serve refuses in a service", i)
					}
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mustRender(t, tc.opts)
			checkRelease(t, r)
			g := gatewayOf(t, r)
			got := g.cfg.Telemetry
			if got.OTLPEndpoint != tc.want.OTLPEndpoint || got.Protocol != tc.want.Protocol || got.ServiceName != tc.want.ServiceName ||
				(got.SampleRatio == nil) != (tc.want.SampleRatio == nil) || (got.SampleRatio != nil && *got.SampleRatio != *tc.want.SampleRatio) {
				t.Errorf("serve reads telemetry %s, want %s\n%s", show(got), show(tc.want), g.text)
			}
			if keys := telemetryKeys(t, g); !slices.Equal(keys, tc.keys) {
				t.Errorf("telemetry keys %q, want %q: only the values set", keys, tc.keys)
			}
			if tc.check != nil {
				tc.check(t, g)
			}
		})
	}
}

// show prints a Telemetry with its ratio's value, not its address.
func show(c config.Telemetry) string {
	r := "nil"
	if c.SampleRatio != nil {
		r = fmt.Sprint(*c.SampleRatio)
	}
	return fmt.Sprintf("{otlp_endpoint:%q protocol:%q sample_ratio:%s service_name:%q}", c.OTLPEndpoint, c.Protocol, r, c.ServiceName)
}

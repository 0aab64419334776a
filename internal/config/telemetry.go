package config

import (
	"math"

	"github.com/mcpfleet/mcpfleet/internal/telemetry"
)

// Telemetry configures OpenTelemetry traces and metrics over OTLP
// (docs/GATEWAY.md, "Tracing"). Unset keys are left to the standard
// OTEL_* environment.
type Telemetry struct {
	// OTLPEndpoint is the OTLP base URL, such as http://127.0.0.1:4318
	// (HTTP/protobuf) or http://127.0.0.1:4317 (gRPC); "" leaves it to
	// OTEL_EXPORTER_OTLP_ENDPOINT, and tracing is off when neither is set.
	OTLPEndpoint string `yaml:"otlp_endpoint"`
	// Protocol is http/protobuf or grpc; "" is OTEL_EXPORTER_OTLP_PROTOCOL,
	// or http/protobuf.
	Protocol string `yaml:"protocol"`
	// SampleRatio is the share of new traces kept, parent-based (a call
	// whose client sampled it is traced); nil leaves it to
	// OTEL_TRACES_SAMPLER, which keeps every trace by default.
	SampleRatio *float64 `yaml:"sample_ratio"`
	// ServiceName is service.name; "" is OTEL_SERVICE_NAME, or mcpfleet.
	ServiceName string `yaml:"service_name"`
}

func (c *Config) validateTelemetry(bad func(string, string, ...any)) {
	t := c.Telemetry
	if t.OTLPEndpoint != "" {
		if err := telemetry.CheckEndpoint(t.OTLPEndpoint); err != nil {
			bad("telemetry.otlp_endpoint", "%v", err)
		}
	}
	if err := telemetry.CheckProtocol(t.Protocol); err != nil {
		bad("telemetry.protocol", "%v", err)
	}
	if r := t.SampleRatio; r != nil && (math.IsNaN(*r) || *r < 0 || *r > 1) {
		bad("telemetry.sample_ratio", "must be between 0 and 1, got %v", *r)
	}
	for _, ch := range t.ServiceName {
		if ch < 0x20 || ch == 0x7f {
			bad("telemetry.service_name", "holds a control character")
			break
		}
	}
}

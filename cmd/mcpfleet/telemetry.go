package main

import (
	"context"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/config"
	"github.com/mcpfleet/mcpfleet/internal/gateway"
	"github.com/mcpfleet/mcpfleet/internal/telemetry"
)

// serveTelemetry is the running serve's tracer and meter, which every
// service's gateway takes (gatewayOptions); nil when tracing is off.
var serveTelemetry atomic.Pointer[telemetry.Telemetry]

// startTelemetry starts the OTLP exporters when the configuration or the
// OTEL_* environment names an endpoint; nil, nil when neither does.
func startTelemetry(ctx context.Context, c *config.Config, log *slog.Logger) (*telemetry.Telemetry, error) {
	tc := telemetry.Config{
		Endpoint:    c.Telemetry.OTLPEndpoint,
		Protocol:    c.Telemetry.Protocol,
		SampleRatio: c.Telemetry.SampleRatio,
		ServiceName: c.Telemetry.ServiceName,
		Default:     "mcpfleet",
	}
	if !telemetry.On(tc, os.Getenv) {
		return nil, nil
	}
	tel, err := telemetry.Start(ctx, tc, "github.com/mcpfleet/mcpfleet/internal/gateway", os.Getenv)
	if err != nil {
		return nil, err
	}
	// The endpoint's host only: a URL may carry what is not for a log.
	log.Info("tracing on", "otlp_endpoint_set", tc.Endpoint != "", "sample_ratio_set", tc.SampleRatio != nil)
	return tel, nil
}

// stopTelemetry flushes what is buffered, for at most 5 s.
func stopTelemetry(tel *telemetry.Telemetry, log *slog.Logger) {
	if tel == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tel.Shutdown(ctx); err != nil {
		log.Warn("flushing telemetry", "error", err)
	}
}

// withTelemetry gives o the running serve's tracer and meter.
func withTelemetry(o *gateway.Options) {
	if t := serveTelemetry.Load(); t != nil {
		o.Tracer, o.Meter = t.Tracer, t.Meter
	}
}

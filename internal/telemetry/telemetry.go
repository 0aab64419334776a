// Package telemetry sets up OpenTelemetry traces and metrics for a
// process: the OTLP exporters (HTTP/protobuf or gRPC), the sampler, the
// resource, and the W3C propagators, from the configuration and the
// standard OTEL_* environment. A process without an endpoint gets nil and
// pays nothing.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.39.0"
	"go.opentelemetry.io/otel/trace"
)

// Config is what the configuration says; the environment fills in what it
// leaves out, as the OpenTelemetry specification's SDK configuration says.
type Config struct {
	// Endpoint is the OTLP base URL (http://host:4318 for HTTP/protobuf,
	// http://host:4317 for gRPC); "" leaves it to OTEL_EXPORTER_OTLP_*.
	Endpoint string
	// Protocol is http/protobuf or grpc; "" is OTEL_EXPORTER_OTLP_PROTOCOL,
	// or http/protobuf.
	Protocol string
	// SampleRatio is the parent-based ratio of new traces kept; nil leaves
	// it to OTEL_TRACES_SAMPLER (parentbased_always_on by default).
	SampleRatio *float64
	// ServiceName is service.name; "" is OTEL_SERVICE_NAME, or Default.
	ServiceName string
	// Default is the service.name when nothing else names one.
	Default string
	// Version is service.version.
	Version string
	// NoMetrics leaves metrics out (a process that records none).
	NoMetrics bool
}

// On reports whether traces are to be exported: an endpoint in the
// configuration or in the environment, and the SDK not disabled there.
func On(c Config, getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	if c.Endpoint != "" {
		return true
	}
	if getenv("OTEL_TRACES_EXPORTER") == "none" {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// CheckEndpoint refuses an endpoint that is not an http or https URL with
// a host and nothing after its path (no credentials, query or fragment).
func CheckEndpoint(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return errors.New("want an http:// or https:// URL such as http://127.0.0.1:4318, without credentials or query")
	}
	return nil
}

// CheckProtocol refuses a protocol other than the two exported.
func CheckProtocol(p string) error {
	switch p {
	case "", "http/protobuf", "grpc":
		return nil
	}
	return fmt.Errorf("must be http/protobuf or grpc, got %q", p)
}

// Telemetry is a process's tracer and meter, and what flushes them.
type Telemetry struct {
	Tracer trace.Tracer
	Meter  metric.Meter
	tp     *sdktrace.TracerProvider
	mp     *sdkmetric.MeterProvider
}

// Propagator is the W3C trace context and baggage, the propagation MCP's
// _meta carries too (SEP-414).
var Propagator propagation.TextMapPropagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// Start sets up the exporters. scope names the instrumentation (the
// package that records).
func Start(ctx context.Context, c Config, scope string, getenv func(string) string) (*Telemetry, error) {
	protocol := c.Protocol
	if protocol == "" {
		protocol = getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	}
	if protocol == "" {
		protocol = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if protocol == "" {
		protocol = "http/protobuf"
	}
	if err := CheckProtocol(protocol); err != nil {
		return nil, fmt.Errorf("telemetry: protocol %w", err)
	}
	if c.Endpoint != "" {
		if err := CheckEndpoint(c.Endpoint); err != nil {
			return nil, fmt.Errorf("telemetry: otlp_endpoint: %w", err)
		}
	}
	spans, err := traceExporter(ctx, protocol, c.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("telemetry: trace exporter: %w", err)
	}
	// OTEL_METRICS_EXPORTER=none: traces only (a backend such as Jaeger
	// takes no metrics).
	metrics := !c.NoMetrics && getenv("OTEL_METRICS_EXPORTER") != "none"
	var points sdkmetric.Exporter
	if metrics {
		if points, err = metricExporter(ctx, protocol, c.Endpoint); err != nil {
			return nil, fmt.Errorf("telemetry: metric exporter: %w", err)
		}
	}
	res, err := newResource(ctx, c, getenv)
	if err != nil {
		return nil, err
	}
	topts := []sdktrace.TracerProviderOption{
		sdktrace.WithBatcher(spans, sdktrace.WithBatchTimeout(time.Second)),
		sdktrace.WithResource(res),
	}
	if c.SampleRatio != nil {
		topts = append(topts, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(*c.SampleRatio))))
	}
	tp := sdktrace.NewTracerProvider(topts...)
	t := &Telemetry{Tracer: tp.Tracer(scope), tp: tp}
	if metrics {
		t.mp = sdkmetric.NewMeterProvider(
			sdkmetric.WithReader(sdkmetric.NewPeriodicReader(points, sdkmetric.WithInterval(metricInterval(getenv)))),
			sdkmetric.WithResource(res),
		)
		t.Meter = t.mp.Meter(scope)
	}
	return t, nil
}

// newResource is service.name and service.version over what
// OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME say; the configuration's
// service name wins over both.
func newResource(ctx context.Context, c Config, getenv func(string) string) (*resource.Resource, error) {
	name := c.ServiceName
	if name == "" {
		name = getenv("OTEL_SERVICE_NAME")
	}
	if name == "" && !strings.Contains(getenv("OTEL_RESOURCE_ATTRIBUTES"), "service.name=") {
		name = c.Default
	}
	opts := []resource.Option{resource.WithFromEnv(), resource.WithTelemetrySDK()}
	if c.Version != "" {
		opts = append(opts, resource.WithAttributes(semconv.ServiceVersion(c.Version)))
	}
	if name != "" {
		// After WithFromEnv, so that the configuration's name wins.
		opts = append(opts, resource.WithAttributes(semconv.ServiceName(name)))
	}
	res, err := resource.New(ctx, opts...)
	if err != nil && res == nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	return res, nil
}

func metricInterval(getenv func(string) string) time.Duration {
	if ms, err := strconv.Atoi(getenv("OTEL_METRIC_EXPORT_INTERVAL")); err == nil && ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	return 30 * time.Second
}

func traceExporter(ctx context.Context, protocol, endpoint string) (sdktrace.SpanExporter, error) {
	if protocol == "grpc" {
		var opts []otlptracegrpc.Option
		if endpoint != "" {
			opts = append(opts, otlptracegrpc.WithEndpointURL(endpoint))
		}
		return otlptracegrpc.New(ctx, opts...)
	}
	var opts []otlptracehttp.Option
	if endpoint != "" {
		opts = append(opts, otlptracehttp.WithEndpointURL(joinPath(endpoint, "/v1/traces")))
	}
	return otlptracehttp.New(ctx, opts...)
}

func metricExporter(ctx context.Context, protocol, endpoint string) (sdkmetric.Exporter, error) {
	if protocol == "grpc" {
		var opts []otlpmetricgrpc.Option
		if endpoint != "" {
			opts = append(opts, otlpmetricgrpc.WithEndpointURL(endpoint))
		}
		return otlpmetricgrpc.New(ctx, opts...)
	}
	var opts []otlpmetrichttp.Option
	if endpoint != "" {
		opts = append(opts, otlpmetrichttp.WithEndpointURL(joinPath(endpoint, "/v1/metrics")))
	}
	return otlpmetrichttp.New(ctx, opts...)
}

// joinPath is the signal's path under a base URL, as
// OTEL_EXPORTER_OTLP_ENDPOINT's are.
func joinPath(base, signal string) string {
	return strings.TrimSuffix(base, "/") + signal
}

// Shutdown flushes what is buffered and stops the exporters, within ctx.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	err := t.tp.Shutdown(ctx)
	if t.mp != nil {
		err = errors.Join(err, t.mp.Shutdown(ctx))
	}
	return err
}

// OperationBuckets are the bucket boundaries, in seconds, that the MCP
// semantic conventions give mcp.server.operation.duration and
// mcp.client.operation.duration.
var OperationBuckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}

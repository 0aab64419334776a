package gateway

import (
	"context"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	josejwt "github.com/go-jose/go-jose/v4/jwt"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/mcpfleet/mcpfleet/internal/idem"
	"github.com/mcpfleet/mcpfleet/internal/identity"
)

// BenchmarkFeatureSteps guards the hot step of the features whose cost
// bench/features.sh measures through a whole gateway and that no other
// benchmark here covers: tracing at ratio 1 and 0.01 (spans recorded and
// handed to a batch exporter that discards them), JWT verification (an
// ES256 token), and a memory idempotency record per call (a new
// Idempotency-Key each call), each against none, one request at a time to
// a canned backend. Limits and the cache have theirs (BenchmarkAdmission,
// BenchmarkCacheHit), the access log BenchmarkAccessLine.
func BenchmarkFeatureSteps(b *testing.B) {
	backend := cannedBackend()
	defer backend.Close()
	idp := newIssuer(b, "k1")
	now := time.Now()
	token := "Bearer " + idp.token(b, josejwt.Claims{Issuer: "https://idp", Subject: "user-1", Audience: josejwt.Audience{"mcp"},
		IssuedAt: josejwt.NewNumericDate(now), Expiry: josejwt.NewNumericDate(now.Add(time.Hour))})
	traced := func(ratio float64) *Options {
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()),
			sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))))
		b.Cleanup(func() { tp.Shutdown(context.Background()) })
		return &Options{Tracer: tp.Tracer("bench")}
	}
	var n atomic.Int64
	keyed := func(url string) *http.Request {
		req := benchRequest(url)
		req.Header.Set("Idempotency-Key", "bench-"+strconv.FormatInt(n.Add(1), 10))
		return req
	}
	withToken := func(url string) *http.Request {
		req := benchRequest(url)
		req.Header.Set("Authorization", token)
		return req
	}
	cases := []struct {
		name       string
		opts       func() *Options
		newRequest func(string) *http.Request
	}{
		{"none", func() *Options { return &Options{NoIdempotency: true} }, benchRequest},
		{"tracing=1", func() *Options { o := traced(1); o.NoIdempotency = true; return o }, benchRequest},
		{"tracing=0.01", func() *Options { o := traced(0.01); o.NoIdempotency = true; return o }, benchRequest},
		{"jwt", func() *Options {
			v, err := identity.NewVerifier(identity.VerifyOptions{Issuers: []string{"https://idp"}, Audiences: []string{"mcp"}})
			if err != nil {
				b.Fatal(err)
			}
			if err := v.SetKeys(idp.jwks); err != nil {
				b.Fatal(err)
			}
			return &Options{Auth: v, NoIdempotency: true}
		}, withToken},
		{"idempotency=memory", func() *Options { return &Options{Idempotency: idem.NewMemory(nil)} }, keyed},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			benchLatency(b, benchGateway(b, "canned", backend.URL, c.opts()), c.newRequest)
		})
	}
}

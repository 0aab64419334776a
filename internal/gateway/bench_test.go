package gateway

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/cache"
	"github.com/mcpfleet/mcpfleet/internal/cache/rediscache"
	"github.com/mcpfleet/mcpfleet/internal/limit"
	"github.com/mcpfleet/mcpfleet/internal/limit/redisstore"
	storepkg "github.com/mcpfleet/mcpfleet/internal/store"
	"github.com/mcpfleet/mcpfleet/internal/store/redistest"
	"github.com/mcpfleet/mcpfleet/internal/testserver"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

var cannedAnswer = []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}]}}`)

func cannedBackend() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(cannedAnswer)
	}))
}

// benchBody is the request the forwarding benchmarks send.
var benchBody = []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)

// benchRequest is one 2026-07-28 tools/call of echo.
func benchRequest(url string) *http.Request {
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(benchBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "echo")
	return req
}

// BenchmarkAdmission measures what the admission step adds to a request:
// one client sending 2026-07-28 tools/calls one after another through the
// gateway to a canned backend, without limits, with the memory store and
// with Redis (a local redis-server); it reports the p50 and p99 latency.
func BenchmarkAdmission(b *testing.B) {
	backend := cannedBackend()
	defer backend.Close()
	opts := limit.Options{Rate: 1e6, Burst: 1e6, Concurrency: 100}
	for _, store := range []string{"none", "memory", "redis"} {
		b.Run("limits="+store, func(b *testing.B) {
			var l *limit.Limiter
			switch store {
			case "memory":
				l = limit.NewLimiter(limit.NewMemory(0), &opts)
			case "redis":
				client, err := storepkg.NewRedisClient("redis://" + redistest.Start(b))
				if err != nil {
					b.Fatal(err)
				}
				defer client.Close()
				l = limit.NewLimiter(redisstore.New(client, "bench:"), &opts)
			}
			if l != nil {
				defer l.Close()
			}
			benchLatency(b, benchGateway(b, "canned", backend.URL, &Options{Limits: l}), benchRequest)
		})
	}
}

// BenchmarkCapacity measures a request that takes a replica's place
// (max_inflight) in a memory store and in Redis, against none: the cost of
// the reservation and its release, one request at a time.
func BenchmarkCapacity(b *testing.B) {
	backend := cannedBackend()
	defer backend.Close()
	for _, store := range []string{"none", "memory", "redis"} {
		b.Run("capacity="+store, func(b *testing.B) {
			var l *limit.Limiter
			switch store {
			case "memory":
				l = limit.NewLimiter(limit.NewMemory(0), nil)
			case "redis":
				client, err := storepkg.NewRedisClient("redis://" + redistest.Start(b))
				if err != nil {
					b.Fatal(err)
				}
				defer client.Close()
				l = limit.NewLimiter(redisstore.New(client, "bench:"), nil)
			}
			o := &Options{}
			if l != nil {
				defer l.Close()
				o.Capacity, o.DefaultMaxInflight = l, 1000
			}
			benchLatency(b, benchGateway(b, "canned", backend.URL, o), benchRequest)
		})
	}
}

// BenchmarkCacheHit measures a tools/list answered by its replica against
// the same answered from the cache, local and shared in Redis, one request
// at a time, in front of a canned backend and of a real testserver (the Go
// SDK); it reports the p50 and p99 latency. The results carry ttlMs and
// cacheScope public, so with a cache every request but the first is a hit.
func BenchmarkCacheHit(b *testing.B) {
	answer := []byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"echo","inputSchema":{"type":"object"}}],"ttlMs":600000,"cacheScope":"public"}}`)
	canned := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	}))
	defer canned.Close()
	ts, err := testserver.New("ts", &testserver.Options{CacheTTL: 10 * time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	real := httptest.NewServer(ts.Handler())
	defer real.Close()
	list := func(url string) *http.Request {
		req := benchRequest(url)
		req.Body = io.NopCloser(bytes.NewReader([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)))
		req.ContentLength = -1
		req.Header.Set("Mcp-Method", "tools/list")
		req.Header.Del("Mcp-Name")
		return req
	}
	for _, backend := range []*httptest.Server{canned, real} {
		name := "canned"
		if backend == real {
			name = "testserver"
		}
		for _, mode := range []string{"off", "local", "shared"} {
			b.Run("backend="+name+"/cache="+mode, func(b *testing.B) {
				var c cache.Store
				switch mode {
				case "local":
					c = cache.NewLocal(0, 0)
				case "shared":
					client, err := storepkg.NewRedisClient("redis://" + redistest.Start(b))
					if err != nil {
						b.Fatal(err)
					}
					defer client.Close()
					c = rediscache.New(client, "bench:", 0, time.Hour)
				}
				benchLatency(b, benchGateway(b, name, backend.URL, &Options{Cache: c}), list)
			})
		}
	}
}

// benchGateway serves a gateway with opts in front of one backend until the
// benchmark ends, and returns its MCP URL.
func benchGateway(b *testing.B, name, backend string, opts *Options) string {
	fl, err := upstream.New([]upstream.Spec{{Name: name, URL: backend + "/mcp"}})
	if err != nil {
		b.Fatal(err)
	}
	gw, err := New(fl, nil, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(gw.Close)
	front := newFront(gw)
	b.Cleanup(front.Close)
	return front.URL + "/mcp"
}

// benchLatency sends b.N requests one at a time and reports p50 and p99.
func benchLatency(b *testing.B, url string, newRequest func(string) *http.Request) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	for b.Loop() {
		req := newRequest(url)
		if req.Header.Get("Authorization") == "" {
			req.Header.Set("Authorization", "Bearer bench")
		}
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		lat = append(lat, time.Since(start))
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

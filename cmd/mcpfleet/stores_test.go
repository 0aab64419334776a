package main

import (
	"fmt"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/config"
	"github.com/mcpfleet/mcpfleet/internal/gateway"
)

// TestBuildStores: every store set to redis is built on one client, with
// the readiness check on it unless turned off; with the defaults nothing
// shared is built.
func TestBuildStores(t *testing.T) {
	for _, checks := range []bool{true, false} {
		c, err := config.Parse(fmt.Appendf(nil, `upstreams: [{url: "http://127.0.0.1:9001/mcp"}]
redis_url: redis://127.0.0.1:1/0
secret_file: secret.yaml
idempotency: redis
task_store: redis
resume: {store: redis}
cache: {mode: shared, tools: [lookup]}
limits: {store: redis, rate: 5}
readyz_checks_store: %v
`, checks))
		if err != nil {
			t.Fatal(err)
		}
		var o gateway.Options
		s, err := buildStores(c, &o, nil)
		if err != nil {
			t.Fatal(err)
		}
		if s.redis == nil || o.Idempotency == nil || o.Tasks == nil || o.Streams == nil || o.Cache == nil || o.Limits == nil {
			t.Errorf("redis for every store: client %v, idempotency %v, tasks %v, streams %v, cache %v, limits %v",
				s.redis != nil, o.Idempotency != nil, o.Tasks != nil, o.Streams != nil, o.Cache != nil, o.Limits != nil)
		}
		if (o.StoreCheck != nil) != checks {
			t.Errorf("readyz_checks_store %v, store check set %v", checks, o.StoreCheck != nil)
		}
		s.close()
	}
	d := config.Default()
	d.Upstreams = []config.Upstream{{URL: "http://127.0.0.1:9001/mcp"}}
	var o gateway.Options
	s, err := buildStores(d, &o, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if s.redis != nil || o.Idempotency != nil || o.Tasks != nil || o.Streams != nil || o.Cache != nil || o.Limits != nil || o.StoreCheck != nil {
		t.Errorf("defaults built a shared store: %+v", o)
	}
}

package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/store/redistest"
	"github.com/mcpfleet/mcpfleet/internal/testproc"
	"github.com/redis/go-redis/v9"
)

// metricSum sums a counter's samples on a gateway's /metrics (admin addr).
func metricSum(t *testing.T, admin, name string) float64 {
	t.Helper()
	return metricWith(t, admin, name, "")
}

// TestGatewaysOnARedisClusterThroughAFailover: three gateway processes on a
// real six-node Redis Cluster (redis_mode: cluster). One caller's runaway
// is held to one set of limits, a tool cap of 3 holds fleet-wide, an
// Idempotency-Key re-issued through each gateway runs once; then the
// primary holding the runaway's keys is killed with SIGKILL: the gateways
// stay up and fail open as configured (counted), no answer is a 5xx, and
// within 5 s of the cluster promoting its replica the runaway is refused
// again, with no restart.
func TestGatewaysOnARedisClusterThroughAFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Redis Cluster and processes")
	}
	c := redistest.StartCluster(t)
	calls, ups := limitsFleet(t)
	var admins []string
	var cfg strings.Builder
	cfg.WriteString(ups + "secret_file: " + writeSecret(t) + "\nredis_mode: cluster\nredis_url: '" + c.URL + "'\nidempotency: redis\n")
	cfg.WriteString("limits: {rate: 5, burst: 5, concurrency: 2, store: redis, tools: {sleep: 3}}\n")
	gws := startGatewaysWithAdmin(t, 3, cfg.String(), &admins)

	// One caller, 16 loops over the gateways for 3 s: one set of limits.
	const d = 3 * time.Second
	admitted, mean := runLoops(t, gws, d)
	reach := reachable(1, mean, d)
	t.Logf("runaway on the cluster: %d admitted in %v of %.1f reachable with calls of %v", admitted, d, reach, mean.Round(time.Millisecond))
	if admitted > 5+5*4 {
		t.Errorf("the cluster admitted %d of one caller's calls in %v, want at most %d: one set of limits", admitted, d, 5+5*4)
	}
	if float64(admitted) < 0.75*reach {
		t.Errorf("the cluster admitted %d, want at least 0.75 of the %.1f the limits let through", admitted, reach)
	}

	// A tool cap of 3 across callers and gateways.
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Go(func() { tryCall(gws[i%3], fmt.Sprintf("caller-%d", i), 0.5) })
	}
	wg.Wait()
	if p := calls.Peak("sleep"); p > 3 {
		t.Errorf("%d calls of the capped tool ran at once at the replicas (12 callers at once), want at most 3", p)
	}

	// An Idempotency-Key re-issued through another gateway replays the
	// first execution.
	for i := range 3 {
		if a := postKeyed(t, gws[i], "idem-caller", "order-42"); a.status != 200 || !strings.Contains(a.body, "mutated") {
			t.Fatalf("keyed call %d through gateway %d: %d %s", i+1, i+1, a.status, a.body)
		}
	}
	if n := calls.Started("mutate"); n != 1 {
		t.Errorf("one Idempotency-Key through three gateways: %d executions, want 1", n)
	}

	// Kill the primary holding the runaway's keys, while it runs.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var stop atomic.Bool
	var bad atomic.Int64
	var refusedAt atomic.Int64 // unix ns of the latest 429
	var loops sync.WaitGroup
	for i := range 8 {
		loops.Go(func() {
			for !stop.Load() {
				a, err := tryCall(gws[i%3], "runaway-agent", 0.05)
				switch {
				case err != nil:
					t.Errorf("a call failed outright during the failover: %v", err)
					bad.Add(1)
					return
				case a.status == 429:
					refusedAt.Store(time.Now().UnixNano())
					time.Sleep(time.Duration(min(a.retryMs, 200)) * time.Millisecond)
				case a.status != 200:
					t.Errorf("answer %d %q during the failover: want 200 (failing open) or 429", a.status, a.body)
					bad.Add(1)
				}
			}
		})
	}
	time.Sleep(500 * time.Millisecond)
	victim := primaryOf(t, ctx, c, "mcpfleet:limit:{c:")
	for _, n := range c.Nodes {
		if n.Addr == victim {
			n.Kill()
		}
	}
	killed := time.Now()
	if err := c.WaitOK(ctx); err != nil {
		t.Fatal(err)
	}
	promoted := time.Now()
	t.Logf("primary %s killed; the cluster was ok again %v later", victim, promoted.Sub(killed).Round(10*time.Millisecond))
	for time.Unix(0, refusedAt.Load()).Before(promoted) {
		if time.Since(promoted) > 5*time.Second {
			t.Errorf("the runaway was not refused again within 5 s of the promotion")
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("refused again %v after the promotion", time.Unix(0, refusedAt.Load()).Sub(promoted).Round(10*time.Millisecond))
	stop.Store(true)
	loops.Wait()
	var failOpen float64
	for _, a := range admins {
		failOpen += metricSum(t, a, "mcpfleet_limits_fail_open_total")
	}
	t.Logf("calls let through without a decision while the primary was gone: %.0f", failOpen)
	if failOpen == 0 {
		t.Errorf("no call was counted failing open while the primary holding the runaway's keys was gone")
	}
	for i, gw := range gws {
		resp, err := http.Get("http://" + gw + "/healthz")
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("gateway %d after the failover: %v %v, want it serving, never restarted", i, resp, err)
			continue
		}
		resp.Body.Close()
	}
}

// postKeyed sends a 2026-07-28 tools/call of mutate with an
// Idempotency-Key, as token.
func postKeyed(t *testing.T, gw, token, key string) callAnswer {
	t.Helper()
	resp, err := post2026(gw, "tools/call", "mutate", `"name":"mutate","arguments":{"key":"k"}`, 7,
		map[string]string{"Authorization": "Bearer " + token, "Idempotency-Key": key})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return callAnswer{status: resp.StatusCode, body: string(b)}
}

// startGatewaysWithAdmin is startGateways with an admin listener each,
// whose addresses it appends to admins.
func startGatewaysWithAdmin(t *testing.T, n int, cfg string, admins *[]string) []string {
	t.Helper()
	var gws []string
	for range n {
		adm := testproc.FreeAddr(t)
		g, _ := startGateways(t, 1, "admin: "+adm+"\n"+cfg)
		gws = append(gws, g...)
		*admins = append(*admins, adm)
	}
	return gws
}

// primaryOf returns the address of the primary holding a key that starts
// with prefix.
func primaryOf(t *testing.T, ctx context.Context, c *redistest.Cluster, prefix string) string {
	t.Helper()
	cl := c.Client(t)
	var mu sync.Mutex
	found := ""
	err := cl.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		keys, err := m.Keys(ctx, prefix+"*").Result()
		if err == nil && len(keys) > 0 {
			mu.Lock()
			found = m.Options().Addr
			mu.Unlock()
		}
		return err
	})
	if err != nil || found == "" {
		t.Fatalf("finding the primary of %s*: %q %v", prefix, found, err)
	}
	return found
}

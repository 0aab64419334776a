package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/mcpfleet/mcpfleet/internal/store/redistest"
	"github.com/mcpfleet/mcpfleet/internal/testproc"
	"github.com/mcpfleet/mcpfleet/internal/testserver"
	"github.com/rs/zerolog"
)

// The fault matrix: Shopify's Toxiproxy, run in this process on loopback,
// sits between a gateway process and its testserver replica, and between
// the gateway and Redis. Each fault is played on a fleet of its own while
// one client per era and call waits on the gateway; every call must end in
// its right answer or a JSON-RPC error within its bound, no mutation may
// run twice, and every mutation a client saw succeed must be in the
// replica's ledger.

// matrixInterval is the gateway's health_check.interval in the matrix:
// small, so that a replica that stopped answering is out within a second.
const matrixInterval = 500 * time.Millisecond

// Two points of a fleet's timeline, from the moment its long calls start:
// the fault comes faultAfter in (the long calls are then mid-stream), and
// the fast calls start fastAfter in, into the fault.
const (
	faultAfter = 300 * time.Millisecond
	fastAfter  = 400 * time.Millisecond
)

// fault is one column of the matrix: apply starts it on the fleet, and the
// function it returns (nil for none) ends it once every call has ended.
type fault struct {
	name  string
	apply func(t *testing.T, f *toxiFleet) (undo func())
}

// toxic returns a fault that adds one toxic to the replica's proxy, in the
// direction stream ("downstream": from the replica to the gateway), with
// the attributes attrs (JSON), and removes it at the end.
func toxic(name, kind, stream, attrs string) fault {
	return fault{name, func(t *testing.T, f *toxiFleet) func() {
		body := fmt.Sprintf(`{"name":%q,"type":%q,"stream":%q,"attributes":%s}`, kind, kind, stream, attrs)
		if _, err := f.replicaProxy.Toxics.AddToxicJson(strings.NewReader(body)); err != nil {
			t.Errorf("adding the toxic %s: %v", body, err)
			return nil
		}
		return func() { f.replicaProxy.Toxics.ResetToxics(t.Context()) }
	}}
}

// matrixFaults are the columns of the matrix, in the order of its table.
func matrixFaults() []fault {
	return []fault{
		toxic("latency 200 ms", "latency", "downstream", `{"latency":200}`),
		toxic("bandwidth 10 KB/s", "bandwidth", "downstream", `{"rate":10}`),
		// Each connection is reset at the next bytes the replica sends:
		// a progress event of a call in flight, the head of a new answer.
		toxic("reset_peer mid-stream", "reset_peer", "downstream", `{"timeout":0}`),
		// The replica's bytes go nowhere and its connections stay open.
		toxic("timeout (blackhole)", "timeout", "downstream", `{"timeout":0}`),
		toxic("slow_close 2 s", "slow_close", "downstream", `{"delay":2000}`),
		// 200 bytes more on each connection, then it closes: in the
		// middle of a stream, or of an answer's head.
		toxic("limit_data mid-answer", "limit_data", "downstream", `{"bytes":200}`),
		{"replica SIGKILL", func(t *testing.T, f *toxiFleet) func() {
			if err := syscall.Kill(-f.replicaGroup, syscall.SIGKILL); err != nil {
				t.Error(err)
			}
			return nil
		}},
		{"Redis down 5 s", func(t *testing.T, f *toxiFleet) func() {
			f.redisProxy.Stop() // refuses new connections and closes the open ones
			var once sync.Once
			restart := func() {
				once.Do(func() {
					if err := f.redisProxy.Start(); err != nil {
						t.Errorf("restarting the Redis proxy: %v", err)
					}
				})
			}
			timer := time.AfterFunc(5*time.Second, restart)
			return func() {
				timer.Stop()
				restart() // now, if the calls ended first
			}
		}},
	}
}

// toxiFleet is one fleet of the matrix: a testserver replica, a Redis
// server, a Toxiproxy proxy in front of each, and a gateway that reaches
// both through them.
type toxiFleet struct {
	gateway      string // the gateway's address
	ledger       string // the replica's ledger file
	replicaGroup int    // the replica's process group
	replicaProxy *toxiproxy.Proxy
	redisProxy   *toxiproxy.Proxy
}

// startToxiFleet starts a fleet for the matrix, stopped at the end of the
// test.
func startToxiFleet(t *testing.T) *toxiFleet {
	t.Helper()
	f := &toxiFleet{ledger: filepath.Join(t.TempDir(), "ledger")}
	api := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	f.redisProxy = startToxiproxy(t, api, "redis", redistest.Start(t))
	addr := testproc.FreeAddr(t)
	f.replicaGroup = startKillable(t, "testserver", "--listen", addr, "--name", "replica", "--ledger", f.ledger)
	testproc.WaitReady(t, "http://"+addr+"/health")
	f.replicaProxy = startToxiproxy(t, api, "replica", addr)
	cfg := "secret_file: " + writeSecret(t) + "\n" +
		"upstreams: [{name: replica, url: 'http://" + f.replicaProxy.Listen + "/mcp'}]\n" +
		"health_check: {interval: " + matrixInterval.String() + ", timeout: " + matrixInterval.String() + "}\n" +
		"redis_url: redis://" + f.redisProxy.Listen + "/0\n" +
		"idempotency: redis\nresume: {store: redis}\nlimits: {rate: 1000, burst: 1000, store: redis}\n"
	gws, _ := startGateways(t, 1, cfg)
	f.gateway = gws[0]
	return f
}

// startToxiproxy starts a proxy to upstream on a free loopback port,
// stopped at the end of the test.
func startToxiproxy(t *testing.T, api *toxiproxy.ApiServer, name, upstream string) *toxiproxy.Proxy {
	t.Helper()
	p := toxiproxy.NewProxy(api, name, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		t.Fatalf("starting the Toxiproxy proxy to %s: %v", name, err)
	}
	t.Cleanup(p.Stop)
	return p
}

// TestFaultMatrix plays every fault of matrixFaults on a fleet of its own,
// with a client per era (2026-07-28, 2025-11-25, 2024-11-05) and per call
// (a fast one, 3 s with progress, a mutating one), and prints the table of
// what each client got. It fails on a call with no answer within its bound
// (its own time + 2 x health_check.interval + 1 s), a wrong answer, a
// mutation that ran twice, or a mutation a client saw succeed that is not
// in the ledger.
func TestFaultMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	var mu sync.Mutex
	var rows []cellResult
	faults := matrixFaults()
	t.Run("faults", func(t *testing.T) {
		for _, ft := range faults {
			t.Run(ft.name, func(t *testing.T) {
				t.Parallel()
				got := playFault(t, ft)
				mu.Lock()
				rows = append(rows, got...)
				mu.Unlock()
			})
		}
	})
	order := func(r cellResult) int {
		return slices.IndexFunc(faults, func(f fault) bool { return f.name == r.fault })
	}
	slices.SortStableFunc(rows, func(a, b cellResult) int { return order(a) - order(b) })
	t.Log("the fault matrix (go test -run TestFaultMatrix -v ./cmd/mcpfleet):\n" + matrixTable(rows))
}

// playFault plays ft on a fleet of its own and checks its calls and the
// ledger.
func playFault(t *testing.T, ft fault) []cellResult {
	f := startToxiFleet(t)
	cells := connectCells(t, f, ft.name)
	start := time.Now()
	var wg sync.WaitGroup
	for _, c := range cells {
		wg.Go(func() {
			if c.call.name == "fast" {
				time.Sleep(time.Until(start.Add(fastAfter)))
			}
			c.run()
		})
	}
	time.Sleep(time.Until(start.Add(faultAfter)))
	undo := ft.apply(t, f)
	wg.Wait()
	if undo != nil {
		undo()
	}
	out := make([]cellResult, 0, len(cells))
	for _, c := range cells {
		out = append(out, c.result)
	}
	checkLedger(t, f.ledger, out)
	for _, r := range out {
		if r.failed() {
			t.Errorf("%s, %s, %s call: %s", r.fault, r.era, r.call, r.cell())
		}
	}
	return out
}

// checkLedger fails the test for a mutation that ran twice, or that a
// client saw succeed and the ledger does not hold.
func checkLedger(t *testing.T, path string, rows []cellResult) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	entries, err := testserver.ReadLedger(strings.NewReader(string(b)))
	if err != nil {
		t.Errorf("the ledger: %v", err)
	}
	runs := map[string]int{}
	for _, e := range entries {
		runs[e.Key]++
	}
	for i := range rows {
		r := &rows[i]
		if r.key == "" {
			continue
		}
		switch n := runs[r.key]; {
		case n > 1:
			r.problem = fmt.Sprintf("double: ran %d times", n)
		case n == 0 && r.outcome == "ok":
			r.problem = "loss: answered ok, not in the ledger"
		}
	}
}

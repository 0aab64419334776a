package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/store/redistest"
	"github.com/mcpfleet/mcpfleet/internal/testproc"
	"github.com/mcpfleet/mcpfleet/internal/testserver"
)

// limitsFleet is three in-process testserver replicas, counted, and the
// upstreams lines of a config naming them.
func limitsFleet(t *testing.T) (*testserver.Gauge, string) {
	t.Helper()
	return countedFleet(t, 0)
}

// countedFleet is limitsFleet with results that carry cacheTTL as ttlMs.
func countedFleet(t *testing.T, cacheTTL time.Duration) (*testserver.Gauge, string) {
	t.Helper()
	calls := &testserver.Gauge{}
	var b strings.Builder
	b.WriteString("upstreams:\n")
	for _, name := range []string{"a", "b", "c"} {
		s, err := testserver.New(name, &testserver.Options{Calls: calls, CacheTTL: cacheTTL})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(s.Handler())
		t.Cleanup(hs.Close)
		fmt.Fprintf(&b, "  - {name: %s, url: '%s/mcp'}\n", name, hs.URL)
	}
	return calls, b.String()
}

// startGateways starts n gateway processes on one config (plus a listen
// line each) and returns their addresses and commands.
func startGateways(t *testing.T, n int, cfg string) ([]string, []*exec.Cmd) {
	t.Helper()
	dir := t.TempDir()
	var addrs []string
	var cmds []*exec.Cmd
	for i := range n {
		addr := testproc.FreeAddr(t) // never the same port twice
		p := filepath.Join(dir, fmt.Sprintf("gw%d.yaml", i))
		if err := os.WriteFile(p, []byte("listen: "+addr+"\n"+cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "serve", "--config", p)
		cmd.Env = append(os.Environ(), "MCPFLEET_RUN_MAIN=1")
		logs := &notAccessLines{}
		cmd.Stderr = logs
		if testing.Verbose() {
			cmd.Stderr = io.MultiWriter(os.Stderr, logs)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-done
			}
			if t.Failed() && !testing.Verbose() {
				t.Logf("gateway %s log (access lines left out):\n%s", addr, logs.String())
			}
		})
		addrs, cmds = append(addrs, addr), append(cmds, cmd)
	}
	for _, a := range addrs {
		testproc.WaitReady(t, "http://"+a+"/readyz")
	}
	return addrs, cmds
}

// notAccessLines keeps what a gateway process logs but its line per
// request, for a failed test to show (a load test's access lines would be
// megabytes). serve writes whole lines.
type notAccessLines struct{ lockedBuffer }

func (w *notAccessLines) Write(p []byte) (int, error) {
	for l := range strings.Lines(string(p)) {
		if !strings.Contains(l, `"msg":"request"`) {
			_, _ = w.lockedBuffer.Write([]byte(l))
		}
	}
	return len(p), nil
}

// callAnswer is a tools/call's answer as these tests read it.
type callAnswer struct {
	status     int
	retryAfter string
	code       int
	retryMs    int64
	body       string
}

// postCall sends a 2026-07-28 tools/call of sleep as token.
func postCall(t *testing.T, gw, token string, seconds float64) callAnswer {
	t.Helper()
	a, err := tryCall(gw, token, seconds)
	if err != nil {
		t.Errorf("posting a call: %v", err)
	}
	return a
}

// tryCall is postCall for a call whose gateway may die under it.
func tryCall(gw, token string, seconds float64) (callAnswer, error) {
	resp, err := post2026(gw, "tools/call", "sleep", fmt.Sprintf(`"name":"sleep","arguments":{"seconds":%g}`, seconds), 1,
		map[string]string{"Authorization": "Bearer " + token})
	if err != nil {
		return callAnswer{}, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := callAnswer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), body: string(b)}
	var v struct {
		Error struct {
			Code int `json:"code"`
			Data struct {
				RetryAfterMs int64 `json:"retryAfterMs"`
			} `json:"data"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &v) == nil {
		a.code, a.retryMs = v.Error.Code, v.Error.Data.RetryAfterMs
	}
	return a, nil
}

// runLoops runs 16 loops of 0.2 s calls by one caller over the gateways in
// turn for d, waiting out every refusal as it says; it returns the calls
// admitted and the mean time they took, and checks every refusal's shape.
func runLoops(t *testing.T, gws []string, d time.Duration) (int64, time.Duration) {
	var admitted, took atomic.Int64
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for i := range 16 {
		gw := gws[i%len(gws)]
		wg.Go(func() {
			for time.Now().Before(deadline) {
				start := time.Now()
				a := postCall(t, gw, "runaway-agent", 0.2)
				switch {
				case a.status == 200 && !strings.Contains(a.body, `"isError":true`):
					admitted.Add(1)
					took.Add(int64(time.Since(start)))
				case a.status == 429 && a.code == -32023 && a.retryMs > 0 && a.retryAfter != "":
					time.Sleep(time.Duration(a.retryMs) * time.Millisecond)
				default:
					t.Errorf("answer %d %q: want 200 or SEP-3304's 429", a.status, a.body)
					return
				}
			}
		})
	}
	wg.Wait()
	n := admitted.Load()
	if n == 0 {
		return 0, 0
	}
	return n, time.Duration(took.Load() / n)
}

// reachable is the most calls of mean length a caller could have had
// admitted in d by stores separate stores at rate 5/s, burst 5 and
// concurrency 2: the rate's budget, or what two slots each hold of calls
// that slow, whichever is fewer.
func reachable(stores int, mean, d time.Duration) float64 {
	budget := float64(stores) * (5 + 5*d.Seconds())
	if mean <= 0 {
		return budget
	}
	return min(budget, float64(stores*2)*d.Seconds()/mean.Seconds())
}

// TestLimitsAcrossGatewayProcesses: one caller, 16 loops over three gateway
// processes, rate 5/s, burst 5, concurrency 2, 10 s of 0.2 s calls. Sharing
// a real redis-server, the fleet admits what one gateway would (5 + 5 x 10);
// each with its own memory store, about three times that.
func TestLimitsAcrossGatewayProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes and runs load for 20 s")
	}
	limits := "limits: {rate: 5, burst: 5, concurrency: 2, store: %s}\n"
	const d = 10 * time.Second

	calls, ups := limitsFleet(t)
	shared := "secret_file: " + writeSecret(t) + "\n" // one routing salt: one name per caller
	gws, _ := startGateways(t, 3, ups+shared+"redis_url: redis://"+redistest.Start(t)+"/0\n"+fmt.Sprintf(limits, "redis"))
	admitted, mean := runLoops(t, gws, d)
	reach := reachable(1, mean, d)
	t.Logf("shared store: %d admitted in %v of %.1f reachable with calls of %v, at most %d running at once at the replicas",
		admitted, d, reach, mean.Round(time.Millisecond), calls.Peak("sleep"))
	// The rate's budget, and a call that began by the deadline may end
	// after it: the point, however slow the calls.
	if admitted > 60 {
		t.Errorf("shared store admitted %d, want at most 60", admitted)
	}
	// At least 0.75 of what the limits let through, 42 of 55 with calls of
	// 0.2 s; on a loaded machine slower calls fill the two slots sooner.
	if float64(admitted) < 0.75*reach {
		t.Errorf("shared store admitted %d, want at least 0.75 of the %.1f its limits let through calls of %v", admitted, reach, mean)
	}
	if p := calls.Peak("sleep"); p > 2 {
		t.Errorf("shared store: %d of the caller's calls ran at once, want at most 2", p)
	}

	calls, ups = limitsFleet(t)
	gws, _ = startGateways(t, 3, ups+shared+fmt.Sprintf(limits, "memory"))
	local, meanLocal := runLoops(t, gws, d)
	reachLocal := reachable(3, meanLocal, d)
	t.Logf("memory stores: %d admitted in %v of %.1f reachable with calls of %v, at most %d running at once",
		local, d, reachLocal, meanLocal.Round(time.Millisecond), calls.Peak("sleep"))
	// Three budgets admit 2.4 times what one did; when the calls were too
	// slow for the budgets to bind, at least 0.75 of what six slots held,
	// as long as that is well over what one budget admitted.
	want := 2.4 * float64(admitted)
	if reachLocal < reachable(3, 0, d) {
		want = min(want, 0.75*reachLocal)
		if want < 1.5*float64(admitted) {
			if local < admitted {
				t.Errorf("three memory stores admitted %d, fewer than the shared %d", local, admitted)
			}
			t.Skipf("the local calls took %v: three memory stores could reach %.1f calls in %v, too few to tell three budgets from the shared one (%d admitted, shared %d)",
				meanLocal, reachLocal, d, local, admitted)
		}
	}
	if float64(local) < want {
		t.Errorf("three memory stores admitted %d, want %.0f (about 3x the shared %d)", local, want, admitted)
	}
}

// TestLeasesOfAKilledGatewayLapse: a gateway killed with SIGKILL while its
// caller holds two leases (concurrency 2, lease_ttl 3s) keeps the caller
// out until they lapse, and no longer than 2 x lease_ttl + 2 s.
func TestLeasesOfAKilledGatewayLapse(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	calls, ups := limitsFleet(t)
	gws, cmds := startGateways(t, 2, ups+"secret_file: "+writeSecret(t)+"\nredis_url: redis://"+redistest.Start(t)+"/0\nlimits: {concurrency: 2, store: redis, lease_ttl: 3s}\n")
	for range 2 {
		go tryCall(gws[0], "holder", 30) // runs on at the replicas after the kill
	}
	deadline := time.Now().Add(5 * time.Second)
	for calls.Running("sleep") < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the two calls never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmds[0].Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmds[0].Wait()
	killed := time.Now()
	if a := postCall(t, gws[1], "holder", 0); a.status != 429 || !strings.Contains(a.body, "concurrency") {
		t.Fatalf("right after the kill: %d %s, want refused by the leases still held", a.status, a.body)
	}
	for {
		a := postCall(t, gws[1], "holder", 0)
		if a.status == 200 {
			break
		}
		if a.status != 429 {
			t.Fatalf("status %d %s", a.status, a.body)
		}
		if time.Since(killed) > 2*3*time.Second+2*time.Second {
			t.Fatalf("still refused %v after the kill: the dead gateway's leases never lapsed", time.Since(killed))
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Renewed every second, the leases lapse 2 to 3 s after the kill.
	if after := time.Since(killed); after < 1500*time.Millisecond {
		t.Errorf("admitted %v after the kill, before the leases could lapse", after)
	}
	t.Logf("admitted through the other gateway %v after the kill", time.Since(killed).Round(10*time.Millisecond))
}

// TestCacheThroughServe: two gateway processes with cache.mode shared
// answer six callers' tools/list with one execution at the replicas, on a
// redis-server and on a Redis Cluster.
func TestCacheThroughServe(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	t.Run("redis", func(t *testing.T) { cacheThroughServe(t, "redis_url: redis://"+redistest.Start(t)+"/0\n") })
	t.Run("redis cluster", func(t *testing.T) {
		cacheThroughServe(t, "redis_mode: cluster\nredis_url: '"+redistest.StartCluster(t).URL+"'\n")
	})
}

// cacheThroughServe: six callers list tools through two gateways sharing
// the cache in the store the lines store name: one execution.
func cacheThroughServe(t *testing.T, store string) {
	calls, ups := countedFleet(t, time.Minute)
	// The tools watch off: its own listings would count at the replicas.
	gws, _ := startGateways(t, 2, ups+"secret_file: "+writeSecret(t)+"\n"+store+"cache: {mode: shared}\ntools: {refresh: 0s}\n")
	for i := range 6 {
		body := `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
		req, _ := http.NewRequest(http.MethodPost, "http://"+gws[i%2]+"/mcp", strings.NewReader(body))
		for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
			"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list", "Authorization": fmt.Sprintf("Bearer caller-%d", i)} {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"cacheScope":"public"`) {
			t.Fatalf("tools/list %d: %d %s", i, resp.StatusCode, b)
		}
	}
	if n := calls.Method("tools/list"); n != 1 {
		t.Fatalf("six callers through two gateways sharing a cache: %d executions, want 1", n)
	}
}

// TestReplicasWithoutHealthEndpoint: three replicas without /health (most
// MCP servers have none) stay eligible with the default checks, /readyz
// answers 200, and a replica that stops is still taken out of new work.
func TestReplicasWithoutHealthEndpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	var b strings.Builder
	// A check may take half a second on a loaded machine (the timeout is
	// at most the interval).
	b.WriteString("health_check: {interval: 500ms, timeout: 500ms}\nbalance: round-robin\nupstreams:\n")
	var servers []*httptest.Server
	for _, name := range []string{"a", "b", "c"} {
		s, err := testserver.New(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		h := s.Handler()
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/mcp" {
				http.NotFound(w, r) // no health endpoint
				return
			}
			h.ServeHTTP(w, r)
		}))
		t.Cleanup(hs.Close)
		servers = append(servers, hs)
		fmt.Fprintf(&b, "  - {name: %s, url: '%s/mcp'}\n", name, hs.URL)
	}
	gws, _ := startGateways(t, 1, b.String())
	time.Sleep(1200 * time.Millisecond) // a few check rounds: 500 ms apart
	if resp, err := http.Get("http://" + gws[0] + "/readyz"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("/readyz with three replicas without /health: %v %v", resp, err)
	}
	seen := map[string]bool{}
	for range 9 {
		seen[whoami(t, gws[0])] = true
	}
	if len(seen) != 3 {
		t.Fatalf("answered by %v, want all three replicas eligible", seen)
	}
	servers[2].Close() // replica c stops
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + gws[0] + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("/readyz %d with two replicas up", resp.StatusCode)
		}
		seen = map[string]bool{}
		for range 6 {
			seen[whoami(t, gws[0])] = true
		}
		if !seen["c"] && len(seen) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stopped replica is still given work: %v", seen)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

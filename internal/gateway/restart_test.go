package gateway

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/session"
	"github.com/mcpfleet/mcpfleet/internal/testserver"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func keyring(t testing.TB, ids ...uint8) *session.Keyring {
	t.Helper()
	var keys []session.Key
	for _, id := range ids {
		k := session.Key{ID: id}
		for i := range k.Secret {
			k.Secret[i] = id*7 + byte(i)
		}
		keys = append(keys, k)
	}
	k, err := session.NewKeyring(keys)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// serveOn serves h on addr ("" = a free loopback port) until the returned
// stop is called.
func serveOn(t *testing.T, addr string, h http.Handler) (string, func()) {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var ln net.Listener
	var err error
	for try := 0; try < 50; try++ { // the port may take a moment to free
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			srv.Close()
		}
	}
	t.Cleanup(stop)
	return ln.Addr().String(), stop
}

// twoReplicas starts two stateful (2025-11-25) testserver replicas.
func twoReplicas(t *testing.T) []upstream.Spec {
	t.Helper()
	var specs []upstream.Spec
	for _, name := range []string{"replica-a", "replica-b"} {
		s, err := testserver.New(name, &testserver.Options{Era: testserver.Era2025})
		if err != nil {
			t.Fatal(err)
		}
		addr, _ := serveOn(t, "", s.Handler())
		specs = append(specs, upstream.Spec{Name: name, URL: "http://" + addr + "/mcp"})
	}
	return specs
}

// TestSessionSurvivesGatewayRestart is the gateway-restart flow of ToolHive's "backend routing
// breaks after proxy runner restart" with the official
// SDK client: initialize and tools/list through a gateway, kill it, start a
// new one on the same address with the same secret, and five tools/list on
// the same session all succeed. The new gateway has no table to remember
// anything: the sealed session ID is all it needs.
func TestSessionSurvivesGatewayRestart(t *testing.T) {
	specs := twoReplicas(t)
	keys := keyring(t, 1)
	gwA := startGatewayOn(t, specs, &Options{Keyring: keys}, io.Discard)
	addr, stopA := serveOn(t, "", gwA)
	cs := connect(t, "http://"+addr+"/mcp", "2025-11-25", nil)
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	stopA()
	gwA.Close()
	// A restart takes a while; meanwhile the client's pool notices that the
	// old process closed its kept-alive connection.
	time.Sleep(200 * time.Millisecond)

	gwB := startGatewayOn(t, specs, &Options{Keyring: keys}, io.Discard)
	serveOn(t, addr, gwB)
	for i := range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := cs.ListTools(ctx, nil)
		cancel()
		if err != nil {
			t.Fatalf("tools/list %d of 5 after the restart: %v", i+1, err)
		}
	}
}

// TestTwoGatewaysAlternating: two gateway processes with the same secret
// answer one session's requests in turn, and every one succeeds on the
// session's replica.
func TestTwoGatewaysAlternating(t *testing.T) {
	specs := twoReplicas(t)
	keys := keyring(t, 1)
	var urls []string
	for range 2 {
		gw := startGatewayOn(t, specs, &Options{Keyring: keys}, io.Discard)
		addr, _ := serveOn(t, "", gw)
		urls = append(urls, "http://"+addr+"/mcp")
	}
	r := newRaw(t, urls[0], "2025-11-25")
	r.initialize()
	var first string
	for i := range 10 {
		r.url = urls[i%2]
		resp := r.post(context.Background(), i+2, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}}, nil)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("request %d via gateway %d: %d %s", i, i%2, resp.StatusCode, b)
		}
		if first == "" {
			first = string(b)
		}
		if !sameReplica(first, string(b)) {
			t.Fatalf("request %d landed elsewhere: %s vs %s", i, b, first)
		}
	}
}

func sameReplica(a, b string) bool {
	for _, n := range []string{"replica-a", "replica-b"} {
		if strings.Contains(a, n) && strings.Contains(b, n) {
			return true
		}
	}
	return false
}

// TestReplicaRestartGives404ThenNewSession: a replica that restarts has lost
// its sessions; the client gets 404 with -32001, and a new session works.
func TestReplicaRestartGives404ThenNewSession(t *testing.T) {
	s, _ := testserver.New("only", &testserver.Options{Era: testserver.Era2025})
	addr, stop := serveOn(t, "", s.Handler())
	gw := startGatewayOn(t, []upstream.Spec{{Name: "only", URL: "http://" + addr + "/mcp"}}, &Options{Keyring: keyring(t, 1)}, io.Discard)
	front, _ := serveOn(t, "", gw)
	r := newRaw(t, "http://"+front+"/mcp", "2025-11-25")
	r.initialize()
	stop()
	// A restart takes a while; meanwhile the gateway's pool notices that the
	// old process closed its kept-alive connections.
	time.Sleep(200 * time.Millisecond)
	s2, _ := testserver.New("only", &testserver.Options{Era: testserver.Era2025})
	serveOn(t, addr, s2.Handler())
	resp := r.post(context.Background(), 2, "tools/list", nil, nil)
	if code, _ := rpcError(t, resp); resp.StatusCode != 404 || code != -32001 {
		t.Fatalf("after the replica restarted: %d %d, want 404 -32001", resp.StatusCode, code)
	}
	if n := testutil.ToFloat64(gw.metrics.sessionMisses.WithLabelValues("ended")); n != 1 {
		t.Errorf("session_not_found{reason=ended} = %v, want 1", n)
	}
	r.session = ""
	r.initialize()
	resp = r.post(context.Background(), 3, "tools/list", nil, nil)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("new session: %d", resp.StatusCode)
	}
}

// TestKeyRotation: a session sealed under the old key opens on a gateway
// whose ring has a new current key and keeps the old one; once the old key
// is retired the session gets 404, counted as unknown_key.
func TestKeyRotation(t *testing.T) {
	specs := twoReplicas(t)
	old := startGatewayOn(t, specs, &Options{Keyring: keyring(t, 1)}, io.Discard)
	oldAddr, _ := serveOn(t, "", old)
	r := newRaw(t, "http://"+oldAddr+"/mcp", "2025-11-25")
	r.initialize()

	rotated := startGatewayOn(t, specs, &Options{Keyring: keyring(t, 2, 1)}, io.Discard)
	rotAddr, _ := serveOn(t, "", rotated)
	r.url = "http://" + rotAddr + "/mcp"
	resp := r.post(context.Background(), 2, "tools/list", nil, nil)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("old session on the rotated ring: %d", resp.StatusCode)
	}

	retired := startGatewayOn(t, specs, &Options{Keyring: keyring(t, 2)}, io.Discard)
	retAddr, _ := serveOn(t, "", retired)
	r.url = "http://" + retAddr + "/mcp"
	resp = r.post(context.Background(), 3, "tools/list", nil, nil)
	if code, _ := rpcError(t, resp); resp.StatusCode != 404 || code != -32001 {
		t.Fatalf("retired key: %d %d, want 404 -32001", resp.StatusCode, code)
	}
	if n := testutil.ToFloat64(retired.metrics.sessionMisses.WithLabelValues("unknown_key")); n != 1 {
		t.Errorf("session_not_found{reason=unknown_key} = %v, want 1", n)
	}
}

// TestSealedIDHidesTheReplica: the client never sees the replica's own
// session ID, and a tampered ID is refused.
func TestSealedIDHidesTheReplica(t *testing.T) {
	f := startFleet(t, 2, nil)
	r := newRaw(t, f.url(), "2025-11-25")
	r.initialize()
	if _, err := f.gw.keys.Open(r.session); err != nil {
		t.Fatalf("the client's session id is not sealed: %v", err)
	}
	for _, name := range []string{"replica-a", "replica-b", "127.0.0.1"} {
		if strings.Contains(r.session, name) {
			t.Errorf("sealed id shows %q", name)
		}
	}
	b := []byte(r.session)
	b[len(b)/2] ^= 1
	r.session = string(b)
	resp := r.post(context.Background(), 2, "tools/list", nil, nil)
	if code, _ := rpcError(t, resp); resp.StatusCode != 404 || code != -32001 {
		t.Errorf("tampered id: %d %d", resp.StatusCode, code)
	}
	var sawTampered bool
	for _, reason := range []string{"tampered", "malformed"} {
		if testutil.ToFloat64(f.gw.metrics.sessionMisses.WithLabelValues(reason)) == 1 {
			sawTampered = true
		}
	}
	if !sawTampered {
		t.Error("the tampered id was not counted")
	}
}

package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testproc"
	"github.com/mcpfleet/mcpfleet/internal/testserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// testCert is a self-signed ECDSA P-256 certificate for 127.0.0.1 and
// localhost, in PEM.
type testCert struct {
	certPEM, keyPEM []byte
	serial          int64
	leaf            *x509.Certificate
}

func newTestCert(t *testing.T, serial int64) testCert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: fmt.Sprintf("mcpfleet test %d", serial)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		IsCA:         true,

		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return testCert{
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}),
		serial:  serial, leaf: leaf,
	}
}

// writeFiles replaces certPath and keyPath the way a rotation does: each
// written beside and renamed over, so no reader sees half a file.
func writeFiles(t *testing.T, certPath string, certPEM []byte, keyPath string, keyPEM []byte) {
	t.Helper()
	for path, b := range map[string][]byte{certPath: certPEM, keyPath: keyPEM} {
		if err := os.WriteFile(path+".new", b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".new", path); err != nil {
			t.Fatal(err)
		}
	}
}

// pool trusts the given certificates.
func pool(certs ...testCert) *x509.CertPool {
	p := x509.NewCertPool()
	for _, c := range certs {
		p.AddCert(c.leaf)
	}
	return p
}

// protoLog records the protocol of every response through it.
type protoLog struct {
	rt     http.RoundTripper
	mu     sync.Mutex // guards protos
	protos map[string]int
}

func (p *protoLog) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := p.rt.RoundTrip(r)
	if err == nil {
		p.mu.Lock()
		p.protos[resp.Proto]++
		p.mu.Unlock()
	}
	return resp, err
}

// only fails the test unless every response was in proto.
func (p *protoLog) only(t *testing.T, proto string) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.protos) != 1 || p.protos[proto] == 0 {
		t.Errorf("responses by protocol %v, want %s only", p.protos, proto)
	}
}

// tlsClient is a client that trusts roots and speaks only HTTP/2 (h2) or
// only HTTP/1.1, as ALPN settles.
func tlsClient(t *testing.T, roots *x509.CertPool, h2 bool) (*http.Client, *protoLog) {
	t.Helper()
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, Protocols: new(http.Protocols)}
	if h2 {
		tr.Protocols.SetHTTP2(true)
	} else {
		tr.Protocols.SetHTTP1(true)
	}
	t.Cleanup(tr.CloseIdleConnections)
	pl := &protoLog{rt: tr, protos: map[string]int{}}
	return &http.Client{Transport: pl}, pl
}

// tlsGateway is an mcpfleet serve process with TLS on, in front of two
// in-process testserver replicas.
type tlsGateway struct {
	addr, admin       string
	certPath, keyPath string // the MCP listener's files
	cmd               *exec.Cmd
	logs              *lockedBuffer // the process's stderr
	servers           []*testserver.Server
	adminCert         testCert
}

// startTLSGateway starts serve with server: std, the MCP listener on cert
// and the admin listener on a certificate of its own.
func startTLSGateway(t *testing.T, cert testCert) *tlsGateway {
	t.Helper()
	dir := t.TempDir()
	g := &tlsGateway{addr: testproc.FreeAddr(t), admin: testproc.FreeAddr(t), logs: &lockedBuffer{},
		certPath: filepath.Join(dir, "cert.pem"), keyPath: filepath.Join(dir, "key.pem"),
		adminCert: newTestCert(t, 100)}
	writeFiles(t, g.certPath, cert.certPEM, g.keyPath, cert.keyPEM)
	adminCert, adminKey := filepath.Join(dir, "admin-cert.pem"), filepath.Join(dir, "admin-key.pem")
	writeFiles(t, adminCert, g.adminCert.certPEM, adminKey, g.adminCert.keyPEM)
	var ups strings.Builder
	for _, name := range []string{"a", "b"} {
		s, err := testserver.New(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(s.Handler())
		t.Cleanup(hs.Close)
		g.servers = append(g.servers, s)
		fmt.Fprintf(&ups, "  - {name: %s, url: '%s/mcp'}\n", name, hs.URL)
	}
	cfg := fmt.Sprintf("listen: %s\nadmin: %s\nserver: std\nkeepalive: 300ms\n"+
		"tls: {cert_file: %s, key_file: %s, admin: {cert_file: %s, key_file: %s}}\nupstreams:\n%s",
		g.addr, g.admin, g.certPath, g.keyPath, adminCert, adminKey, ups.String())
	cfgPath := filepath.Join(dir, "fleet.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	g.cmd = exec.Command(os.Args[0], "serve", "--config", cfgPath)
	g.cmd.Env = append(os.Environ(), "MCPFLEET_RUN_MAIN=1")
	g.cmd.Stderr = g.logs
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		g.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { g.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			g.cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("gateway log:\n%s", g.logs.String())
		}
	})
	client, _ := tlsClient(t, pool(cert), true)
	waitReadyTLS(t, client, "https://"+g.addr+"/readyz")
	return g
}

// waitReadyTLS polls u with client until it answers 200, for up to ten
// seconds.
func waitReadyTLS(t *testing.T, client *http.Client, u string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		resp, err := client.Get(u)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s not ready after 10s: %v", u, last)
}

// servedSerial dials addr anew and returns the serial of the certificate
// it presents.
func servedSerial(t *testing.T, addr string) int64 {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatalf("dialing %s: %v", addr, err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
}

// connectTLS opens an SDK session through the gateway with client.
func connectTLS(t *testing.T, url, version string, client *http.Client, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "tls-test", Version: "1"}, copts)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: client}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connecting at %s: %v", version, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// progressTimes calls sleep with progress every 0.3 s for 1.5 s and
// returns when each notification arrived, from the call's start, and the
// call's length.
func progressTimes(t *testing.T, url, version string, client *http.Client) ([]time.Duration, time.Duration) {
	t.Helper()
	var mu sync.Mutex
	var times []time.Duration
	var start time.Time
	cs := connectTLS(t, url, version, client, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			times = append(times, time.Since(start))
		},
	})
	params := &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"seconds": 1.5, "progress_every": 0.3}}
	params.SetProgressToken("p")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	mu.Lock()
	start = time.Now()
	mu.Unlock()
	if _, err := cs.CallTool(ctx, params); err != nil {
		t.Fatalf("calling sleep: %v", err)
	}
	took := time.Since(start)
	// The SDK hands notifications to the handler on its own goroutine.
	deadline := time.Now().Add(2 * time.Second)
	for {
		mu.Lock()
		n := len(times)
		mu.Unlock()
		if n >= 4 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	return append([]time.Duration(nil), times...), took
}

// TestTLSServesBothErasOverH2AndHTTP1 is the done criterion of TLS on the
// MCP listener: the official SDK client, over HTTP/2 and over HTTP/1.1
// forced, in both eras, gets sessions, tool lists and calls through a
// gateway process, and a slow tool's progress notifications arrive one by
// one as the tool sends them, not together at the end.
func TestTLSServesBothErasOverH2AndHTTP1(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	cert := newTestCert(t, 1)
	g := startTLSGateway(t, cert)
	tests := []struct {
		name    string
		h2      bool
		proto   string
		version string
	}{
		{"h2/2026-07-28", true, "HTTP/2.0", "2026-07-28"},
		{"h2/2025-11-25", true, "HTTP/2.0", "2025-11-25"},
		{"http1.1/2026-07-28", false, "HTTP/1.1", "2026-07-28"},
		{"http1.1/2025-11-25", false, "HTTP/1.1", "2025-11-25"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, protos := tlsClient(t, pool(cert), tt.h2)
			url := "https://" + g.addr + "/mcp"
			cs := connectTLS(t, url, tt.version, client, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			tools, err := cs.ListTools(ctx, nil)
			if err != nil || len(tools.Tools) == 0 {
				t.Fatalf("tools/list: %v, %v", tools, err)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
			if err != nil || res.IsError {
				t.Fatalf("whoami: %+v, %v", res, err)
			}
			if who := res.Content[0].(*mcp.TextContent).Text; who != "a" && who != "b" {
				t.Errorf("whoami answered %q", who)
			}
			times, took := progressTimes(t, url, tt.version, client)
			t.Logf("progress at %v in a %v call", times, took)
			if len(times) < 3 {
				t.Fatalf("%d progress notifications arrived, want at least 3", len(times))
			}
			// Event by event: the first long before the end, and spread
			// over the call as the tool sent them (every 0.3 s).
			if times[0] > took-600*time.Millisecond {
				t.Errorf("the first progress came %v into a %v call: held back", times[0], took)
			}
			if spread := times[len(times)-1] - times[0]; spread < 400*time.Millisecond {
				t.Errorf("progress notifications came within %v of each other: held back and sent together", spread)
			}
			protos.only(t, tt.proto)
			headerLimit(t, client, "https://"+g.addr+"/healthz")
		})
	}
}

// headerLimit sends headers over max_header_bytes (64 KiB by default): an
// HTTP/1.1 server answers 431; over HTTP/2 the limit is announced in
// SETTINGS_MAX_HEADER_LIST_SIZE, so Go's client refuses to send them, and
// a client that did would get 431.
func headerLimit(t *testing.T, client *http.Client, url string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("X-Big", strings.Repeat("a", 200<<10)) // well past the limit and net/http's 4 KiB of slop
	resp, err := client.Do(req)
	if err != nil {
		if !strings.Contains(err.Error(), "larger than peer's advertised limit") {
			t.Errorf("headers over the limit: %v", err)
		}
		return
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("headers over the limit: %s %d, want 431", resp.Proto, resp.StatusCode)
	}
}

// TestTLSCurlHTTP2 posts a 2026-07-28 call with curl --http2 over TLS.
func TestTLSCurlHTTP2(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl not installed")
	}
	if v, _ := exec.Command(curl, "--version").Output(); !strings.Contains(string(v), "HTTP2") {
		t.Skip("this curl has no HTTP/2 (no HTTP2 among its features)")
	}
	cert := newTestCert(t, 1)
	g := startTLSGateway(t, cert)
	out, err := exec.Command(curl, "-sS", "--http2", "-k", "-m", "10", "-w", "\n%{http_version} %{http_code}",
		"https://"+g.addr+"/mcp",
		"-H", "Content-Type: application/json", "-H", "Accept: application/json, text/event-stream",
		"-H", "Mcp-Protocol-Version: 2026-07-28", "-H", "Mcp-Method: tools/call", "-H", "Mcp-Name: whoami",
		"--data", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
	).CombinedOutput()
	if err != nil {
		t.Fatalf("curl: %v\n%s", err, out)
	}
	if !strings.HasSuffix(string(out), "\n2 200") || !strings.Contains(string(out), `"result"`) {
		t.Errorf("curl --http2 got %q, want an HTTP/2 200 with a result", out)
	}
}

// TestTLSCertificateReloadOnHangup replaces the certificate files under a
// gateway process and sends SIGHUP: new connections get the new
// certificate while a call streaming on an old connection goes on to its
// result; a pair that does not match is refused and the certificate in use
// stays. The admin listener serves its own certificate.
func TestTLSCertificateReloadOnHangup(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	first, second := newTestCert(t, 1), newTestCert(t, 2)
	g := startTLSGateway(t, first)
	if got := servedSerial(t, g.admin); got != g.adminCert.serial {
		t.Errorf("the admin listener presents serial %d, want its own %d", got, g.adminCert.serial)
	}
	admin, _ := tlsClient(t, pool(g.adminCert), false)
	waitReadyTLS(t, admin, "https://"+g.admin+"/metrics")

	// A call streams on an HTTP/2 connection opened under the first
	// certificate; its first progress notification says it is under way.
	client, _ := tlsClient(t, pool(first, second), true)
	progressed := make(chan struct{}, 16)
	cs := connectTLS(t, "https://"+g.addr+"/mcp", "2026-07-28", client, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			progressed <- struct{}{}
		},
	})
	params := &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"seconds": 3, "progress_every": 0.2}}
	params.SetProgressToken("long")
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, params)
		if err == nil && res.IsError {
			err = fmt.Errorf("error result %+v", res)
		}
		done <- err
	}()
	select {
	case <-progressed:
	case err := <-done:
		t.Fatalf("the long call ended before it streamed: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no progress from the long call")
	}

	writeFiles(t, g.certPath, second.certPEM, g.keyPath, second.keyPEM)
	g.cmd.Process.Signal(syscall.SIGHUP)
	deadline := time.Now().Add(5 * time.Second)
	for servedSerial(t, g.addr) != second.serial {
		if time.Now().After(deadline) {
			t.Fatal("new connections still get the first certificate 5 s after SIGHUP")
		}
		time.Sleep(20 * time.Millisecond)
	}
	fresh, _ := tlsClient(t, pool(second), true)
	waitReadyTLS(t, fresh, "https://"+g.addr+"/readyz")
	for len(progressed) > 0 {
		<-progressed
	}
	select {
	case <-progressed: // the open stream goes on after the reload
	case err := <-done:
		t.Fatalf("the long call ended at the reload: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no progress on the open stream after the reload")
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the call streaming across the reload: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the call streaming across the reload never ended")
	}

	// A certificate with another's key: refused, the second one stays.
	third := newTestCert(t, 3)
	writeFiles(t, g.certPath, third.certPEM, g.keyPath, second.keyPEM)
	g.cmd.Process.Signal(syscall.SIGHUP)
	deadline = time.Now().Add(5 * time.Second)
	for !strings.Contains(g.logs.String(), "certificate reload refused") {
		if time.Now().After(deadline) {
			t.Fatal("no refusal logged for a mismatched pair")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := servedSerial(t, g.addr); got != second.serial {
		t.Errorf("after a refused reload new connections get serial %d, want %d", got, second.serial)
	}
	if !strings.Contains(g.logs.String(), "tls.cert_file, tls.key_file") {
		t.Errorf("the refusal does not name the keys:\n%s", g.logs.String())
	}
}

// TestTLSUsageErrors: serve refuses TLS it cannot serve, naming the keys,
// and starts nothing.
func TestTLSUsageErrors(t *testing.T) {
	dir := t.TempDir()
	a, b := newTestCert(t, 1), newTestCert(t, 2)
	cert, key, otherKey := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), filepath.Join(dir, "other.pem")
	writeFiles(t, cert, a.certPEM, key, a.keyPEM)
	if err := os.WriteFile(otherKey, b.keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"serve", "--listen", testproc.FreeAddr(t), "--upstream", "http://127.0.0.1:1/mcp"}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"h1 with tls", []string{"--server", "h1", "--tls-cert-file", cert, "--tls-key-file", key}, "server: h1 serves plaintext only; tls.cert_file and tls.key_file need server: std"},
		{"unknown server", []string{"--server", "h3"}, `server: must be h1 or std, got "h3"`},
		{"cert without key", []string{"--server", "std", "--tls-cert-file", cert}, "tls.key_file: required with tls.cert_file"},
		{"missing cert", []string{"--server", "std", "--tls-cert-file", filepath.Join(dir, "none.pem"), "--tls-key-file", key}, "tls.cert_file: reading certificate"},
		{"missing key", []string{"--server", "std", "--tls-cert-file", cert, "--tls-key-file", filepath.Join(dir, "none.pem")}, "tls.key_file: reading private key"},
		{"mismatched pair", []string{"--server", "std", "--tls-cert-file", cert, "--tls-key-file", otherKey}, "tls.cert_file, tls.key_file: loading the pair"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCmd(t, context.Background(), append(base, tt.args...)...)
			if code != 2 || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 mentioning %q", code, stderr, tt.want)
			}
		})
	}
}

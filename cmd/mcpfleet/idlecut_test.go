package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testproc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// nginxIdleCut is nginx as many deployments run it in front of a gateway,
// with an idle timeout far shorter than its default 60 s: proxy_read_timeout
// ends a response upstream has sent nothing on for 3 s.
const nginxIdleCut = `master_process off;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path %[1]s/client_body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    server {
        listen %[2]s;
        location / {
            proxy_pass http://%[3]s;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
            proxy_read_timeout 3s;
        }
    }
}
`

// TestKeepAlivesOutliveAnIdleTimeout: behind a real nginx that cuts a
// response silent for 3 s, a tool that says nothing for 8 s completes when
// the gateway sends keep-alives every second, and is cut when they are
// off, in both eras (so the check can fail).
func TestKeepAlivesOutliveAnIdleTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("runs nginx and 8 s tool calls")
	}
	nginx := testproc.FindBinary(t, "nginx", "nginx", "MCPFLEET_REQUIRE_BALANCERS")
	backend := testproc.FreeAddr(t)
	bctx, stopBackend := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { stopBackend(); wg.Wait() }) // after the parallel subtests
	wg.Go(func() {
		run(bctx, []string{"testserver", "--listen", backend, "--name", "a"}, &lockedBuffer{}, &lockedBuffer{})
	})
	testproc.WaitReady(t, "http://"+backend+"/health")
	for _, keep := range []time.Duration{time.Second, 0} {
		for _, era := range []string{"2025-11-25", "2026-07-28"} {
			t.Run(fmt.Sprintf("keepalive=%v/%s", keep, era), func(t *testing.T) {
				t.Parallel()
				front := startGatewayBehindNginx(t, nginx, backend, keep)
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				sdk := mcp.NewClient(&mcp.Implementation{Name: "idle-cut", Version: "1"}, nil)
				cs, err := sdk.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: front + "/mcp", MaxRetries: -1},
					&mcp.ClientSessionOptions{ProtocolVersion: era})
				if err != nil {
					t.Fatalf("connecting through nginx: %v", err)
				}
				defer cs.Close()
				start := time.Now()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"seconds": 8}})
				took := time.Since(start)
				switch {
				case keep > 0 && err != nil:
					t.Fatalf("with keep-alives the 8 s call failed after %v: %v", took, err)
				case keep > 0 && res.IsError:
					t.Fatalf("with keep-alives the 8 s call answered an error: %+v", res.Content)
				case keep > 0 && took < 8*time.Second:
					t.Fatalf("the call answered after %v, before the tool could have slept 8 s", took)
				case keep == 0 && err == nil && !res.IsError:
					t.Fatalf("without keep-alives the 8 s call completed after %v: nginx's 3 s idle timeout never cut it", took)
				}
				t.Logf("took %v, err %v", took.Round(100*time.Millisecond), err)
			})
		}
	}
}

// startGatewayBehindNginx runs serve in front of backend with keep-alives
// every keep (0: off), and nginx with a 3 s idle timeout in front of it; it
// returns nginx's base URL.
func startGatewayBehindNginx(t *testing.T, nginx, backend string, keep time.Duration) string {
	t.Helper()
	addr := testproc.FreeAddr(t)
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan int, 1)
	var errb lockedBuffer
	go func() {
		served <- run(ctx, []string{"serve", "--listen", addr, "--upstream", "http://" + backend + "/mcp",
			"--keepalive", keep.String(), "--grace", "1s"}, &lockedBuffer{}, &errb)
	}()
	t.Cleanup(func() {
		stop()
		if code := <-served; code != 0 {
			t.Errorf("serve exit %d: %s", code, errb.String())
		}
	})
	testproc.WaitReady(t, "http://"+addr+"/readyz")
	dir, listen := t.TempDir(), testproc.FreeAddr(t)
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, nginxIdleCut, dir, listen, addr), 0o600); err != nil {
		t.Fatal(err)
	}
	testproc.Start(t, nginx, "-p", dir+"/", "-e", dir+"/error.log", "-c", conf, "-g", "daemon off;")
	testproc.WaitReady(t, "http://"+listen+"/readyz")
	return "http://" + listen
}

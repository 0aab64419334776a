package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/config"
	"github.com/mcpfleet/mcpfleet/internal/testserver"
)

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("demo")
	listen := fs.String("listen", "127.0.0.1:8080", "gateway `address`")
	adminAddr := fs.String("admin", "127.0.0.1:0", "admin listener `address`: the fleet page, /api/fleet, /metrics; port 0 picks a free one")
	replicas := fs.Int("replicas", 3, "test server replicas to start (1 to 12)")
	dur := fs.Duration("for", 0, "stop after this long (default: until Ctrl-C)")
	verbose := fs.Bool("v", false, "log every request")
	stdioKids := fs.Bool("stdio", false, "run the test servers as stdio children of the gateway (testserver --stdio), as a stdio fleet is served")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *replicas < 1 || *replicas > 12 {
		return usageError{fmt.Errorf("-replicas: want 1 to 12, got %d", *replicas)}
	}
	if *dur > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *dur)
		defer cancel()
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	cfg := config.Default()
	cfg.Listen = *listen
	cfg.Admin = *adminAddr
	// The replicas drain with the demo; they stop before the gateway does.
	srvCtx, stopServers := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { stopServers(); wg.Wait() }()
	if *stdioKids {
		up, err := demoStdio(*replicas)
		if err != nil {
			return err
		}
		cfg.Upstreams = append(cfg.Upstreams, up)
	}
	for i := range *replicas {
		if *stdioKids {
			break
		}
		name := fmt.Sprintf("replica-%c", 'a'+i)
		srv, err := testserver.New(name, &testserver.Options{Logger: log, ShutdownGrace: 2 * time.Second})
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("listening for %s: %w", name, err)
		}
		wg.Go(func() { _ = srv.Serve(srvCtx, ln, 0) })
		cfg.Upstreams = append(cfg.Upstreams, config.Upstream{Name: name, URL: "http://" + ln.Addr().String() + "/mcp"})
	}
	if err := cfg.Validate(); err != nil {
		return usageError{err}
	}
	gw, err := startGateway(cfg, "", log, logSinks{})
	if err != nil {
		return err
	}
	printDemo(stdout, gw.addr.String(), gw.admin, cfg)
	<-ctx.Done()
	fmt.Fprintln(stdout, "\nmcpfleet demo: stopping")
	err = gw.shutdown(2 * time.Second)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return err // --for ran out: a normal end
	}
	return err
}

func printDemo(w io.Writer, addr string, admin net.Addr, cfg config.Config) {
	url := "http://" + addr + cfg.Path
	specs := upstreamSpecs(&cfg)
	kind := "test servers"
	if len(cfg.Upstreams) == 1 && cfg.Upstreams[0].IsStdio() {
		kind = "stdio test servers (children of the gateway)"
	}
	fmt.Fprintf(w, "mcpfleet demo: %d %s behind the gateway\n\n", len(specs), kind)
	for _, u := range specs {
		fmt.Fprintf(w, "  %-10s %s\n", u.Name, u.URL)
	}
	fmt.Fprintf(w, "\n  gateway    %s\n  health     http://%s/healthz\n", url, addr)
	if admin != nil {
		fmt.Fprintf(w, "  fleet page http://%s/ (live: state, load, sessions; drain and resume)\n", admin)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Ask the fleet who answers (2026-07-28, stateless: any replica may):\n\n%s\n\n", curlWhoami(url))
	fmt.Fprintf(w, "Or connect an MCP client to %s. The MCP Inspector, on Node %s or newer:\n"+
		"  npx @modelcontextprotocol/inspector --transport http --server-url %s\n"+
		"On Node 20 (Debian's), its last release that runs there:\n"+
		"  npx -y @modelcontextprotocol/inspector@%s\n"+
		"  then open the address it prints with &transport=streamable-http&serverUrl=%s added\n\n"+
		"Ctrl-C stops the fleet.\n", url, inspectorNode, url, inspectorNode20, url)
}

// The MCP Inspector's Node versions (its package.json "engines"): its
// releases from 0.16.0 on want Node 22.7.5 or newer, from 2.0.0 on
// 22.19.0, and fail on Node 20, Debian's; 0.15.0, the last without that
// bound, runs on Node 20 and reaches the gateway over Streamable HTTP, but
// takes the transport and URL in its page's address (or its form), not
// as flags.
const (
	inspectorNode   = "22.19"
	inspectorNode20 = "0.15.0"
)

// curlWhoami is a 2026-07-28 tools/call of whoami, headers mirroring the
// body as SEP-2243 requires.
func curlWhoami(url string) string {
	return `  curl -sN ` + url + ` \
    -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' \
    -H 'Mcp-Protocol-Version: 2026-07-28' \
    -H 'Mcp-Method: tools/call' -H 'Mcp-Name: whoami' \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'`
}

// demoStdio is the demo's stdio upstream: n children of this very binary
// running testserver --stdio, each named for whoami as its child.
func demoStdio(n int) (config.Upstream, error) {
	exe, err := os.Executable()
	if err != nil {
		return config.Upstream{}, fmt.Errorf("finding this program for its stdio children: %w", err)
	}
	return config.Upstream{Name: "child", Stdio: config.Stdio{
		Command:   []string{"sh", "-c", `exec "$0" testserver --stdio --name "$CHILD"`, exe},
		Env:       map[string]string{"CHILD": "{child}"},
		Processes: n,
	}}, nil
}

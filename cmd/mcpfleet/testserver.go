package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/telemetry"
	"github.com/mcpfleet/mcpfleet/internal/testserver"
)

func runTestserver(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("testserver")
	listen := fs.String("listen", "127.0.0.1:9001", "listener `address`")
	name := fs.String("name", "", "replica name, the text of whoami (default: the listen address)")
	era := fs.String("era", "both", "protocol eras served on /mcp: both, 2025 or 2026")
	drain := fs.Duration("drain-delay", 0, "after SIGTERM, how long /health answers draining while /mcp still serves")
	grace := fs.Duration("grace", testserver.ShutdownGrace, "after the drain delay, how long calls in flight get to finish before the rest are killed (0: none)")
	ledger := fs.String("ledger", "", "append one line per mutation (key, replica, time) to `file`; replicas may share one")
	eventStore := fs.Bool("event-store", false, "keep the events of 2025-11-25 streams in memory, so that clients resume them here with Last-Event-ID")
	cacheTTL := fs.Duration("cache-ttl", 0, "ttlMs cache hint (SEP-2549) on discover, list and resources/read results, whole milliseconds (default 0: stale at once)")
	slots := fs.Int("slots", 0, "tool calls that run at once; the others wait, first come first served (0: no limit)")
	keepAlive := fs.Duration("keepalive", 0, "write the SSE comment \": keepalive\" on a /mcp stream silent this long (0: never)")
	var addTools, describe listFlag
	fs.Var(&addTools, "add-tool", "serve one more tool of this `name` (it answers its name), as a new version of the server would; repeatable")
	fs.Var(&describe, "describe", "serve the tool named before = with this description instead (`tool=text`): a changed definition; repeatable")
	resourceMetadata := fs.Bool("resource-metadata", false, "serve an OAuth protected-resource document (RFC 9728) at /.well-known/oauth-protected-resource and its path-suffixed forms, naming this replica")
	otlp := fs.String("otlp-endpoint", "", "export a span per /mcp request over OTLP/HTTP to this base `URL` (such as http://127.0.0.1:4318), under the trace context the request brings (default off)")
	stdio := fs.Bool("stdio", false, "serve MCP on stdin and stdout instead of HTTP, one JSON-RPC message a line, as a stdio server (logs go to stderr; -listen is not used)")
	stateless := fs.Bool("stateless", false, "serve 2025-11-25 requests with the SDK's stateless handler too: no sessions, any replica answers any request")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *drain < 0 {
		return usageError{fmt.Errorf("-drain-delay: must not be negative")}
	}
	if *grace < 0 {
		return usageError{fmt.Errorf("-grace: must not be negative")}
	}
	if *name == "" {
		*name = *listen
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	opts := &testserver.Options{
		Era: *era, Logger: log, CacheTTL: *cacheTTL, EventStore: *eventStore,
		ShutdownGrace: *grace, Slots: *slots, KeepAlive: *keepAlive, Stateless: *stateless,
		Tools: addTools, ResourceMetadata: *resourceMetadata,
	}
	for _, d := range describe {
		tool, text, ok := strings.Cut(d, "=")
		if !ok || tool == "" {
			return usageError{fmt.Errorf("-describe %q: want tool=text", d)}
		}
		if opts.Describe == nil {
			opts.Describe = map[string]string{}
		}
		opts.Describe[tool] = text
	}
	if *grace == 0 {
		opts.ShutdownGrace = time.Nanosecond // Options reads 0 as the default grace; the flag's 0 is none
	}
	if *ledger != "" {
		l, err := testserver.OpenLedger(*ledger)
		if err != nil {
			return err
		}
		defer l.Close()
		opts.Ledger = l
	}
	if *otlp != "" {
		tel, err := telemetry.Start(ctx, telemetry.Config{Endpoint: *otlp, Default: "mcpfleet-testserver", NoMetrics: true}, "github.com/mcpfleet/mcpfleet/internal/testserver", os.Getenv)
		if err != nil {
			return usageError{fmt.Errorf("-otlp-endpoint: %w", err)}
		}
		defer stopTelemetry(tel, log)
		opts.Tracer = tel.Tracer
	}
	srv, err := testserver.New(*name, opts)
	if err != nil {
		return usageError{err}
	}
	if *stdio {
		return srv.ServeStdio(ctx, os.Stdin, nopCloser{stdout})
	}
	ln, err := listenTCP("--listen", *listen)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "mcpfleet testserver %s: serving MCP at http://%s/mcp\n", *name, ln.Addr())
	err = srv.Serve(ctx, ln, *drain)
	// One line a load generator can read, whatever Serve returned; stderr
	// has it too, as the "test server stopped" log line.
	fmt.Fprintf(stdout, "mcpfleet testserver %s: stopped, %d calls killed\n", *name, srv.Killed())
	return err
}

// nopCloser is a writer whose Close does nothing: the stdio test server
// does not close the stdout it was given.
type nopCloser struct{ io.Writer }

// Close does nothing.
func (nopCloser) Close() error { return nil }

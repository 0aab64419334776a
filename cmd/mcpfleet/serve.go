package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/admin"
	"github.com/mcpfleet/mcpfleet/internal/config"
	"github.com/mcpfleet/mcpfleet/internal/hostmatch"
	"github.com/mcpfleet/mcpfleet/internal/logwriter"
	"github.com/mcpfleet/mcpfleet/internal/store"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
	"github.com/mcpfleet/mcpfleet/internal/version"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("serve")
	// Flags left out keep the file's keys; the help prints the defaults of
	// config.Default, each once: the duration flags carry them as their
	// own defaults (applied only when given), the string flags' defaults
	// are "" (not given) and their text names the default.
	def := config.Default()
	path := fs.String("config", "", "YAML configuration `file` (docs/CONFIG.md); flags override its keys")
	listen := fs.String("listen", "", fmt.Sprintf("MCP listener `address` (default %s)", def.Listen))
	admin := fs.String("admin", "", "admin listener `address` for /metrics and the fleet page and API (default off); off loopback it needs --admin-token-file")
	adminToken := fs.String("admin-token-file", "", "`file` holding the bearer token every admin route but the page and /metrics then requires (default none)")
	var ups listFlag
	fs.Var(&ups, "upstream", "replica MCP endpoint `URL` (repeatable); replaces the config's upstreams")
	stdioCmd := fs.String("stdio", "", "run this stdio MCP server `command` as the fleet's replicas, split as a shell would but never run by one (\"npx -y @modelcontextprotocol/server-memory\"); replaces the config's upstreams")
	processes := fs.Int("processes", 0, fmt.Sprintf("how many children of --stdio run (default %d)", config.DefaultStdioProcesses))
	bal := fs.String("balance", "", fmt.Sprintf("hash, least-inflight or round-robin (default %s)", def.Balance))
	proxies := fs.String("trusted-proxies", "", "comma-separated `CIDRs` of proxies trusted to name the client (needs --trusted-proxy-header)")
	proxyHeader := fs.String("trusted-proxy-header", "", "`header` trusted proxies name the client in, e.g. X-Forwarded-For")
	keep := fs.Duration("keepalive", time.Duration(def.KeepAlive), "SSE keep-alive interval; 0 turns it off")
	level := fs.String("log-level", "", fmt.Sprintf("debug, info, warn or error (default %s)", def.LogLevel))
	health := fs.Duration("health-check-interval", time.Duration(def.HealthCheck.Interval), "interval of active /health checks; 0 turns them off")
	drain := fs.Duration("drain-delay", time.Duration(def.DrainDelay), "after SIGTERM, how long to keep serving with /readyz draining, at most 5m; 0 stops accepting at once")
	grace := fs.Duration("grace", time.Duration(def.Grace), "after the drain delay, how long requests and streams in flight may finish")
	secret := fs.String("secret-file", "", "session keys and routing salt `file` (mode 0600; 'mcpfleet secret' makes one)")
	server := fs.String("server", "", "MCP listener's HTTP stack: h1 (plaintext HTTP/1.1) or std (net/http: HTTP/1.1, and HTTP/2 with TLS) (default std with TLS, else h1)")
	certFile := fs.String("tls-cert-file", "", "PEM certificate chain `file` for TLS on the MCP listener (needs --tls-key-file; refused with server h1)")
	keyFile := fs.String("tls-key-file", "", "PEM private key `file` of --tls-cert-file")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	cfg := def
	if *path != "" {
		var err error
		if cfg, err = config.Read(*path); err != nil {
			return usageError{err}
		}
	}
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&cfg.Listen, *listen)
	set(&cfg.Admin, *admin)
	set(&cfg.AdminTokenFile, *adminToken)
	set(&cfg.Balance, *bal)
	set(&cfg.LogLevel, *level)
	set(&cfg.SecretFile, *secret)
	set(&cfg.TrustedProxyHeader, *proxyHeader)
	set(&cfg.Server, *server)
	set(&cfg.TLS.CertFile, *certFile)
	set(&cfg.TLS.KeyFile, *keyFile)
	if *proxies != "" {
		cfg.TrustedProxies = strings.Split(*proxies, ",")
	}
	if given["keepalive"] {
		cfg.KeepAlive = config.Duration(*keep)
	}
	if given["health-check-interval"] {
		cfg.HealthCheck.Interval = config.Duration(*health)
	}
	if given["drain-delay"] {
		cfg.DrainDelay = config.Duration(*drain)
	}
	if given["grace"] {
		cfg.Grace = config.Duration(*grace)
	}
	if err := stdioFlag(&cfg, *stdioCmd, *processes, len(ups) > 0, given["processes"]); err != nil {
		return usageError{err}
	}
	if len(ups) > 0 {
		cfg.Upstreams = nil
		for _, u := range ups {
			// Named by the flag, not by the key it fills.
			if _, err := upstream.ParseURL(u); err != nil {
				return usageError{fmt.Errorf("--upstream: %w", err)}
			}
			cfg.Upstreams = append(cfg.Upstreams, config.Upstream{URL: u})
		}
	}
	// Flags and file together must make a valid configuration; nothing
	// starts otherwise.
	if err := cfg.Validate(); err != nil {
		if *path != "" && len(given) == 1 {
			err = config.Locate(err, *path) // the file alone: its lines are true
		}
		return usageError{err}
	}
	filePath := ""
	if *path != "" && len(given) == 1 {
		filePath = *path
	}
	if _, err := checkAuthz(&cfg, filePath); err != nil {
		return usageError{err}
	}
	// The log (an access log line per request) is written by one
	// goroutine in batches, never on a request's; closed last, so that
	// every line logged until the end of shutdown is written before the
	// command returns.
	lw := logwriter.New(stderr, logwriter.Options{})
	defer lw.Close()
	log := slog.New(slog.NewJSONHandler(lw, &slog.HandlerOptions{Level: logLevel(&cfg)}))
	store.SetLogger(log)
	tel, err := startTelemetry(ctx, &cfg, log)
	if err != nil {
		return err
	}
	defer stopTelemetry(tel, log)
	serveTelemetry.Store(tel)
	defer serveTelemetry.Store(nil)
	audit, err := openAudit(cfg.Audit, lw)
	if err != nil {
		return usageError{err}
	}
	defer audit.close()
	gw, err := startGateway(cfg, *path, log, logSinks{access: lw, audit: audit.w, auditSubject: cfg.Audit.IncludeSubject})
	if err != nil {
		return err
	}
	gw.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "mcpfleet_log_lines_dropped_total",
		Help: "Log lines dropped because the log's buffer was full or its write failed.",
	}, func() float64 { return float64(lw.Dropped() + audit.dropped()) }))
	gw.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "mcpfleet_redis_round_trips_total",
		Help: "Round trips to the Redis or Valkey server of the stores, counted by the client: a command or a pipeline is one.",
	}, func() float64 { return float64(store.RoundTrips()) }))
	fmt.Fprintf(stdout, "mcpfleet: serving MCP at %s\n", mcpURL(cfg, gw.addr))
	<-ctx.Done()
	return gw.drainAndShutdown(time.Duration(cfg.DrainDelay), time.Duration(cfg.Grace))
}

// runningGateway is a gateway serving on its listeners: one MCP service,
// or several behind one router.
type runningGateway struct {
	addr    net.Addr // the MCP listener's address
	admin   net.Addr // nil when off
	svcs    *serviceSet
	srv     mcpServer
	adm     *http.Server
	certs   []*certSlot // the listeners' certificates, reloaded on SIGHUP
	served  chan error
	log     *slog.Logger
	bg      *background // SIGHUP reloads
	reg     *prometheus.Registry
	cfgPath string
}

// gcPercent is the garbage collector's target when GOGC is not set. A
// gateway's live heap is small (buffers and records of requests in flight)
// and its garbage is per request, so collecting less often buys
// throughput for a little memory: on loopback, 400 against Go's 100 took
// 1-7% off the gateway's CPU per request (three runs) and added about 4 KiB
// to an idle stream's share (docs/BENCHMARKS.md).
const gcPercent = 400

// tuneGC sets gcPercent unless the operator chose with GOGC.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
}

// startGateway listens and serves the gateway described by a validated cfg.
// configPath, if not "", is re-read on SIGHUP. Everything (certificates,
// listeners, background loops and the SIGHUP handler) is ready before the
// first request is served, so a gateway that answers /readyz also reloads.
// startGateway starts the gateway of cfg; sinks are where its access log
// lines (gateway.Options.AccessLog) and audit lines go.
func startGateway(cfg config.Config, configPath string, log *slog.Logger, sinks logSinks) (*runningGateway, error) {
	tuneGC()
	certs, admCerts, err := loadCerts(cfg, log)
	if err != nil {
		return nil, usageError{err}
	}
	rg := &runningGateway{served: make(chan error, 2), log: log, reg: prometheus.NewRegistry(), cfgPath: configPath}
	if rg.svcs, err = startServices(cfg, rg.reg, log, sinks, memoryBudget(&cfg, log)); err != nil {
		return nil, err
	}
	for _, c := range []*certSlot{certs, admCerts} {
		if c != nil {
			rg.certs = append(rg.certs, c)
		}
	}
	fail := func(err error, lns ...net.Listener) (*runningGateway, error) {
		for _, ln := range lns {
			if ln != nil {
				ln.Close()
			}
		}
		rg.svcs.close()
		return nil, err
	}
	ln, err := listenTCP("listen", cfg.Listen)
	if err != nil {
		return fail(err)
	}
	rg.addr = ln.Addr()
	if cfg.SSESendBuffer > 0 {
		ln = sendBufferListener{ln, int(cfg.SSESendBuffer)}
	}
	var aln net.Listener
	var adminToken string
	if cfg.Admin != "" {
		if adminToken, err = readAdminToken(cfg.AdminTokenFile); err != nil {
			return fail(usageError{err}, ln)
		}
		if aln, err = listenTCP("admin", cfg.Admin); err != nil {
			return fail(err, ln)
		}
		rg.admin = aln.Addr()
	}
	rg.startReloads(cfg, configPath)
	rg.bg.wg.Go(func() { adaptGC(rg.bg.ctx) })
	srv, serve := newMCPServer(cfg, rg.svcs.handler(), log, certs)
	// Legacy GET streams end once the listener is closed, not before: a
	// client reconnects at once, and must find the port closed (and retry
	// elsewhere, or later) rather than a gateway that would end its new
	// stream as soon as it opened.
	srv.RegisterOnShutdown(rg.svcs.endStandaloneStreams)
	rg.srv = srv
	go func() { rg.served <- serve(ln) }()
	if aln != nil {
		rg.serveAdmin(aln, admCerts, &cfg, adminToken)
	}
	build := version.Get()
	attrs := []any{"version", build.Version, "commit", build.Commit, "addr", rg.addr.String(), "admin", cfg.Admin, "server", cfg.Server, "tls", certs != nil}
	if names := rg.svcs.names(); len(names) > 1 || names[0] != "" {
		attrs = append(attrs, "services", names)
	} else {
		attrs = append(attrs, "upstreams", len(cfg.Upstreams), "balance", cfg.Balance)
	}
	log.Info("gateway listening", attrs...)
	return rg, nil
}

// loadCerts loads the MCP and admin listeners' certificates, each nil when
// its listener serves plaintext.
func loadCerts(cfg config.Config, log *slog.Logger) (mcp, admin *certSlot, err error) {
	if cfg.TLS.Enabled() {
		if mcp, err = newCertSlot("tls", cfg.TLS.CertPair); err != nil {
			return nil, nil, err
		}
		log.Info("loaded certificate", certAttrs(mcp.prefix, mcp.cert.Load())...)
	}
	if cfg.TLS.Admin.Enabled() {
		if admin, err = newCertSlot("tls.admin", cfg.TLS.Admin); err != nil {
			return nil, nil, err
		}
		log.Info("loaded certificate", certAttrs(admin.prefix, admin.cert.Load())...)
	}
	return mcp, admin, nil
}

// serveAdmin serves /metrics (behind token unless admin_metrics_open),
// the fleet page and API (token, when not "", guarding /api/) and, with
// admin_pprof, Go's profiles behind token, on aln, over TLS when certs is
// not nil; every route behind the Host and Origin check.
func (rg *runningGateway) serveAdmin(aln net.Listener, certs *certSlot, cfg *config.Config, token string) {
	rg.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		buildInfoGauge(version.Get()))
	mux := http.NewServeMux()
	rg.svcs.registerAdmin(mux, &admin.Options{Token: token, Log: rg.log})
	origins, anyOrigin, _ := hostmatch.ParseOrigins(cfg.AllowedOrigins) // validated
	l := &admin.Listener{
		Token:       token,
		Metrics:     promhttp.HandlerFor(rg.reg, promhttp.HandlerOpts{}),
		MetricsOpen: cfg.AdminMetricsOpen,
		Pprof:       cfg.AdminPprof,
		Guard:       &hostmatch.Guard{Strict: true, Hosts: cfg.AllowedHosts, Origins: origins, AnyOrigin: anyOrigin},
	}
	handler := l.Serve(mux)
	rg.adm = &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second,
		ErrorLog: newServerLog(rg.log)}
	if certs == nil {
		go func() { rg.served <- rg.adm.Serve(aln) }()
		return
	}
	rg.adm.TLSConfig = certs.tlsConfig(true)
	go func() { rg.served <- rg.adm.ServeTLS(aln, "", "") }()
}

// drainAndShutdown is the gateway's own drain: /readyz answers
// 503 draining at once, so balancers in front stop sending new work, while
// the listener keeps serving for delay; then shutdown.
func (rg *runningGateway) drainAndShutdown(delay, grace time.Duration) error {
	rg.svcs.setDraining()
	if delay > 0 {
		rg.log.Info("draining: still serving", "drain_delay", delay.String())
		time.Sleep(delay)
	}
	return rg.shutdown(grace)
}

// shutdown stops: /readyz turns 503 at once, the listeners stop accepting,
// and requests and streams in flight get grace to finish before they are cut.
func (rg *runningGateway) shutdown(grace time.Duration) error {
	rg.svcs.setDraining()
	rg.log.Info("shutting down", "grace", grace.String())
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := rg.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		rg.log.Warn("grace over: closing streams still open")
		// Legacy streams get a last event first (an ID and a retry,
		// SEP-1699), so that their clients resume them elsewhere.
		rg.svcs.endStreamsForShutdown()
		err = rg.srv.Close()
	}
	if rg.adm != nil {
		rg.adm.Close()
	}
	rg.bg.stop()
	rg.svcs.close()
	return err
}

// readAdminToken reads the admin token from path ("" for none): one line,
// in a file only this process's user (or group) may read, as the secret
// file. No error quotes the token.
func readAdminToken(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	if err := config.CheckSecretFile(path); err != nil {
		return "", fmt.Errorf("admin_token_file %s: %w", path, err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading admin_token_file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	switch {
	case tok == "":
		return "", fmt.Errorf("admin_token_file %s: empty: want one line, the token", path)
	case strings.ContainsAny(tok, "\r\n"):
		return "", fmt.Errorf("admin_token_file %s: more than one line: want one line, the token", path)
	case len(tok) < 16:
		return "", fmt.Errorf("admin_token_file %s: the token is shorter than 16 characters", path)
	case strings.ContainsFunc(tok, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return "", fmt.Errorf("admin_token_file %s: the token holds spaces or control characters", path)
	}
	return tok, nil
}

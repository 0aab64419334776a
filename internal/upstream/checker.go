package upstream

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/health"
)

// Defaults of CheckOptions, as HAProxy's "check inter 2s fall 2 rise 2"
// configures it: a dead replica is out within about four seconds. Fall and rise
// are package health's, which the simulator uses too.
const (
	DefaultCheckInterval = health.DefaultInterval
	DefaultCheckTimeout  = 1 * time.Second
	DefaultFall          = health.DefaultFall
	DefaultRise          = health.DefaultRise
	DefaultCheckPath     = "/health"
)

// The check modes (CheckOptions.Mode).
const (
	// CheckAuto, the default, asks the health path, and proves the MCP
	// endpoint too (prove.go): when the path answers 200, until the
	// endpoint stands proven (at start, and after any failed check); at
	// every check when the replica has no health path (noHealthStatus). A
	// URL that serves no MCP is down.
	CheckAuto = "auto"
	// CheckHTTP asks the health path; a 404 there switches the replica to
	// connection checks. It never looks at the MCP endpoint.
	CheckHTTP = "http"
	// CheckMCP asks the MCP endpoint: a 2026-07-28 server/discover, which
	// opens no session.
	CheckMCP = "mcp"
)

// CheckModes are the check modes, the default first.
var CheckModes = []string{CheckAuto, CheckHTTP, CheckMCP}

// maxCheckBody bounds how much of a check's answer is read.
const maxCheckBody = 4 << 10

// ErrCheckerRunning is returned by Run when another Checker already runs on
// the fleet.
var ErrCheckerRunning = errors.New("a health checker already runs on this fleet")

// CheckOptions configures active health checks. The zero value means the
// defaults.
type CheckOptions struct {
	// Interval is the time between rounds; 0 means 2s.
	Interval time.Duration
	// Timeout bounds each check, connect to last body byte; 0 means 1s.
	Timeout time.Duration
	// Fall is how many consecutive failures take a replica down; 0 means 2.
	Fall int
	// Rise is how many consecutive ok checks bring a down or draining
	// replica up; 0 means 2.
	Rise int
	// Path is requested on each replica's scheme and host; "" means
	// "/health". It must start with "/".
	Path string
	// Mode is how a replica is checked: CheckAuto ("" too) asks Path and
	// proves the MCP endpoint where Path does not say enough; CheckHTTP
	// asks Path, and a replica that answers it 404 has no health endpoint
	// and is checked by connection from then on; CheckMCP asks the
	// replica's MCP endpoint itself with a request that opens no session.
	Mode string
	// Host is the Host header sent; "" means each replica URL's host. Seed
	// 001: a replica bound to one host may refuse a check naming no host.
	Host string
	// Client sends the checks; nil means a client that opens a fresh
	// connection per check (so the check tests what a new request needs),
	// uses no proxy and follows no redirect. Timeout applies either way.
	Client *http.Client
	// OnChange, if not nil, is called on every state change, in order for
	// each replica, from the goroutine that observed it. It must not block
	// for long nor call the replica's Report methods.
	OnChange func(replica string, from, to State)
	// Logger receives one Info record per state change; nil discards.
	Logger *slog.Logger
}

// Validate reports options that cannot work.
func (o *CheckOptions) Validate() error {
	switch {
	case o.Interval < 0:
		return fmt.Errorf("health check interval %v: must not be negative", o.Interval)
	case o.Timeout < 0:
		return fmt.Errorf("health check timeout %v: must not be negative", o.Timeout)
	case o.Fall < 0 || o.Rise < 0:
		return fmt.Errorf("health check fall %d, rise %d: must not be negative", o.Fall, o.Rise)
	case o.Path != "" && !strings.HasPrefix(o.Path, "/"):
		return fmt.Errorf("health check path %q: must start with /", o.Path)
	case strings.ContainsAny(o.Path, "?#"):
		return fmt.Errorf("health check path %q: no query or fragment allowed", o.Path)
	case o.Mode != "" && !slices.Contains(CheckModes, o.Mode):
		return fmt.Errorf("health check mode %q: want one of %s", o.Mode, strings.Join(CheckModes, ", "))
	}
	return nil
}

// Checker checks every replica of a fleet each Interval and moves their
// health state (see health.Next). Replicas that join the fleet are checked from
// the next round on.
type Checker struct {
	fleet    *Fleet
	interval time.Duration
	timeout  time.Duration
	path     string
	mode     string
	host     string
	client   *http.Client
	policy   *policy
}

// NewChecker returns a checker of f; opts nil means defaults. It checks
// nothing until Run or Check.
func NewChecker(f *Fleet, opts *CheckOptions) (*Checker, error) {
	var o CheckOptions
	if opts != nil {
		o = *opts
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	c := &Checker{
		fleet:    f,
		interval: cmp.Or(o.Interval, DefaultCheckInterval),
		timeout:  cmp.Or(o.Timeout, DefaultCheckTimeout),
		path:     cmp.Or(o.Path, DefaultCheckPath),
		mode:     cmp.Or(o.Mode, CheckAuto),
		host:     o.Host,
		client:   o.Client,
		policy: &policy{
			fall:     cmp.Or(o.Fall, DefaultFall),
			rise:     cmp.Or(o.Rise, DefaultRise),
			onChange: o.OnChange,
			log:      o.Logger,
		},
	}
	if c.policy.log == nil {
		c.policy.log = slog.New(slog.DiscardHandler)
	}
	if c.client == nil {
		c.client = defaultCheckClient(c.timeout)
	}
	return c, nil
}

// Run checks the fleet at once and then every Interval until ctx is done,
// and returns nil then. While it runs, the replicas' passive reports
// (ReportConnectFailure, ReportDraining) follow its Fall, Rise and OnChange;
// when it returns they are ignored again, and states stay as last observed.
// One Checker at a time may run on a fleet; another returns
// ErrCheckerRunning.
func (c *Checker) Run(ctx context.Context) error {
	if !c.fleet.policy.CompareAndSwap(nil, c.policy) {
		return ErrCheckerRunning
	}
	defer c.fleet.policy.Store(nil)
	t := time.NewTicker(c.interval)
	defer t.Stop()
	for {
		c.Check(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Check runs one round: it checks every replica of the current snapshot
// concurrently, applies the results and returns when all are done (within
// Timeout). Run calls it; tests and a startup path may too.
func (c *Checker) Check(ctx context.Context) {
	var wg sync.WaitGroup
	for _, r := range c.fleet.Snapshot().replicas {
		wg.Go(func() { c.checkOne(ctx, r) })
	}
	wg.Wait()
}

// checkOne checks r and applies the result, unless the check was cut short
// by ctx or r left the fleet meanwhile.
func (c *Checker) checkOne(ctx context.Context, r *Replica) {
	res, reason := c.probe(ctx, r)
	if ctx.Err() != nil || c.fleet.Snapshot().Lookup(r.name) != r {
		return
	}
	// Until a replica has passed a check, one check decides its state:
	// the first that fails takes it down at once (HAProxy's default
	// init-state "up"), the first that passes brings it up (Envoy's
	// startup rule), so a fleet dead at start is seen dead after one
	// round, not fall rounds. Its state is set before its check is
	// recorded: /readyz waits for every replica's first check and must
	// then read the state that check gave.
	if r.proven.Load() {
		r.observe(res, reason, c.policy)
	} else {
		r.observeWith(res, reason, c.policy, 1, 1)
		r.proven.Store(res == ResultOK)
	}
	if res != ResultOK {
		r.mcpProven.Store(false) // proven again once it passes
	}
	check := Check{At: time.Now(), Result: res, Reason: reason}
	r.stats.lastCheck.Store(&check)
	r.stats.checks.add(check)
}

// probe sends one check: 200 is ok, 503 with a JSON "status":"draining" is
// draining, anything else a failure. Most MCP servers have no health
// endpoint: one that answers the path 404 has none (said once in the log),
// and is checked on its MCP endpoint from then on, or by connection in
// mode http. In mode auto a 200 is ok once the MCP endpoint stands proven
// too. The reason never holds header values.
func (c *Checker) probe(ctx context.Context, r *Replica) (Result, string) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	switch {
	case c.mode == CheckMCP:
		return c.probeMCP(ctx, r)
	case r.noHealthPath.Load():
		return c.probeNoHealth(ctx, r)
	}
	target := url.URL{Scheme: r.url.Scheme, Host: r.url.Host, Path: c.path}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
	if err != nil {
		return ResultFail, fmt.Sprintf("building check: %v", err)
	}
	req.Host = cmp.Or(c.host, r.url.Host)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "mcpfleet-health-check")
	resp, err := c.client.Do(req)
	if err != nil {
		return ResultFail, failReason(err, c.timeout)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxCheckBody))
	switch {
	case err != nil:
		return ResultFail, "reading answer: " + failReason(err, c.timeout)
	case resp.StatusCode == http.StatusOK:
		if c.mode == CheckAuto && !r.mcpProven.Load() {
			return c.proveMCP(ctx, r)
		}
		return ResultOK, "status 200"
	case resp.StatusCode == http.StatusServiceUnavailable && health.SaysDraining(body):
		return ResultDraining, "status 503 draining"
	case resp.StatusCode == http.StatusNotFound || c.mode == CheckAuto && noHealthStatus(resp.StatusCode):
		if !r.noHealthPath.Swap(true) {
			how := "its MCP endpoint"
			if c.mode == CheckHTTP {
				how = "connection"
			}
			c.policy.log.Info("replica has no health endpoint: checking it by "+how, "replica", r.name, "path", c.path)
		}
		return c.probeNoHealth(ctx, r)
	}
	return ResultFail, fmt.Sprintf("status %d", resp.StatusCode)
}

// noHealthStatus reports a status that, in mode auto, says the health path
// is no health endpoint to read: not there (404), no GET there (405), or
// behind the authorization that guards the whole replica (401, 403), whose
// MCP endpoint then proves itself with its challenge.
func noHealthStatus(status int) bool {
	switch status {
	case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusUnauthorized, http.StatusForbidden:
		return true
	}
	return false
}

// probeNoHealth checks a replica without a health endpoint: its MCP
// endpoint in mode auto, a connection in mode http.
func (c *Checker) probeNoHealth(ctx context.Context, r *Replica) (Result, string) {
	if c.mode == CheckAuto {
		return c.proveMCP(ctx, r)
	}
	return c.probeConn(ctx, r)
}

// probeConn checks that the replica accepts a connection.
func (c *Checker) probeConn(ctx context.Context, r *Replica) (Result, string) {
	addr := r.url.Host
	if r.url.Port() == "" {
		port := "80"
		if r.url.Scheme == "https" {
			port = "443"
		}
		addr = net.JoinHostPort(r.url.Hostname(), port)
	}
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return ResultFail, "connect: " + failReason(err, c.timeout)
	}
	conn.Close()
	return ResultOK, "connected"
}

func failReason(err error, timeout time.Duration) string {
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		return fmt.Sprintf("timeout after %v", timeout)
	}
	return err.Error()
}

func defaultCheckClient(timeout time.Duration) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			DialContext:       (&net.Dialer{Timeout: timeout}).DialContext,
			DisableKeepAlives: true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       timeout,
	}
}

// Package testserver is a real MCP server, built on the official Go SDK, that
// tests, demos and benchmarks run behind the gateway as upstream replicas.
//
// One endpoint, /mcp, serves both protocol eras: the 2025-11-25 era with
// sessions minted at initialize, and the 2026-07-28 era of stateless requests
// (SEP-2575). /health reports readiness and turns to 503 while draining.
package testserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go.opentelemetry.io/otel/trace"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Protocol eras a Server can serve, the values of [Options.Era].
const (
	// EraBoth serves the 2025-11-25 and the 2026-07-28 eras on one endpoint.
	EraBoth = "both"
	// Era2025 serves only the 2025-11-25 era: sessions minted at initialize.
	Era2025 = "2025"
	// Era2026 serves only the 2026-07-28 era: stateless requests.
	Era2026 = "2026"
)

// ShutdownGrace is how long [Server.Serve] gives calls in flight to finish,
// once its drain delay is over, before it closes them.
const ShutdownGrace = 15 * time.Second

// errStopped ends the calls still in flight when the shutdown grace runs out.
var errStopped = errors.New("server stopped: shutdown grace ran out")

// Options configures a Server. A nil *Options is the same as the zero value.
type Options struct {
	// Tracer, when set, traces every request to /mcp as a server span
	// under the trace context it brings (trace.go). Nil means no tracing.
	Tracer trace.Tracer

	// Era selects the protocol eras served on /mcp: [EraBoth], [Era2025] or
	// [Era2026]. The zero value "" means [EraBoth].
	Era string

	// Logger receives lifecycle lines and the SDK's warnings and errors.
	// Nil means discard.
	Logger *slog.Logger

	// ShutdownGrace bounds how long Serve waits for calls in flight after
	// its drain delay. Zero means [ShutdownGrace].
	ShutdownGrace time.Duration

	// Ledger, when set, receives one line per mutation ("KEY REPLICA
	// RFC3339NANO"), written whole in one Write, so that mutations can be
	// counted across restarts of a replica. Several replicas may share one
	// file opened with O_APPEND. Nil means no ledger.
	Ledger io.Writer

	// Tools are more tools this replica serves from its start, each as
	// AddTool adds one: a new version of the server that adds a tool.
	Tools []string

	// Describe replaces the descriptions of the tools it names: a replica
	// serving a changed definition (OWASP MCP03, a rug pull).
	Describe map[string]string

	// Calls, when set, counts the tool calls running on this replica and
	// the MCP requests it handles, by method and resources/read URI (and
	// those of every other replica that shares it). Nil means no count.
	Calls *Gauge

	// CacheTTL, when positive, is the ttlMs hint (SEP-2549) on every result
	// that carries cache hints: server/discover, tools/list, prompts/list,
	// resources/list, resources/templates/list and resources/read. It must
	// be a whole number of milliseconds. Zero means the SDK's default,
	// ttlMs 0: stale at once. The cacheScope hint does not depend on it:
	// "private" on mcpfleet://profile, "public" on every other result.
	CacheTTL time.Duration

	// EventStore keeps the events of 2025-11-25 streams in memory (the Go
	// SDK's MemoryEventStore), so that every event carries an ID and a
	// client resumes a broken stream at this replica with Last-Event-ID.
	// False means no store: events carry no ID and streams cannot be
	// resumed here.
	EventStore bool

	// Slots, when positive, is how many tool calls (tools/call of any tool)
	// run at once, the fleet lab's execution slots. The others wait, first
	// come first served; a waiting call whose request is cancelled leaves
	// the queue without running. Zero means no limit. /health reports the
	// calls running and waiting either way.
	Slots int

	// KeepAlive, when positive, is how long an SSE response of /mcp (a POST
	// stream or a GET stream, in either era) may stay silent before the
	// server writes the comment ": keepalive", never inside an event. Zero
	// means no keep-alives.
	KeepAlive time.Duration

	// Stateless serves every /mcp request with the SDK's stateless handler,
	// 2025-11-25 requests included: each request is handled on its own,
	// initialize mints no session ID, an Mcp-Session-Id header is ignored,
	// and GET and DELETE answer 405. Any replica so answers any request,
	// which stands for a fleet whose sessions live in a shared store. A
	// call, of either era, is cancelled when its POST closes. False means
	// 2025-11-25 sessions live in this replica. It changes nothing with
	// [Era2026].
	Stateless bool

	// ResourceMetadata serves an OAuth protected-resource metadata document
	// (RFC 9728) at /.well-known/oauth-protected-resource and at every
	// path-suffixed form of it, as an OAuth-protected server does: its
	// resource is the suffix (the path the client was given), and it names
	// this replica (mcpfleet_replica), so that a test tells which replica
	// answered. False means those paths are 404.
	ResourceMetadata bool

	// PageSize, when positive, is how many entries a page of tools/list,
	// prompts/list, resources/list and resources/templates/list holds;
	// the rest follow through nextCursor. Zero means the SDK's default
	// (1000).
	PageSize int

	// JSONResponse answers a POST with one JSON body (application/json)
	// instead of an SSE stream, where the SDK can. False means SSE.
	JSONResponse bool
}

// Validate reports whether o is usable. A nil o is valid.
func (o *Options) Validate() error {
	if o == nil {
		return nil
	}
	switch o.Era {
	case "", EraBoth, Era2025, Era2026:
	default:
		return fmt.Errorf("validating options: unknown era %q (want %q, %q or %q)", o.Era, EraBoth, Era2025, Era2026)
	}
	if o.ShutdownGrace < 0 {
		return fmt.Errorf("validating options: negative shutdown grace %v", o.ShutdownGrace)
	}
	if o.Slots < 0 {
		return fmt.Errorf("validating options: negative slots %d", o.Slots)
	}
	if o.KeepAlive < 0 {
		return fmt.Errorf("validating options: negative keep-alive %v", o.KeepAlive)
	}
	if o.CacheTTL < 0 || o.CacheTTL%time.Millisecond != 0 {
		return fmt.Errorf("validating options: cache TTL %v is not a non-negative whole number of milliseconds", o.CacheTTL)
	}
	return nil
}

// Server is one test replica: an MCP server with the whoami, echo, sleep,
// burn, mutate, count, lookup and fetch tools, the mcpfleet://catalog and
// mcpfleet://profile resources, the mcpfleet://item/{id} resource template
// and the greet prompt, plus a health endpoint. Its methods are safe for
// concurrent use.
type Server struct {
	name   string
	opts   Options // Tools and Describe
	era    string
	grace  time.Duration
	logger *slog.Logger

	mcp      *mcp.Server
	handler  http.Handler
	inflight inflight
	draining atomic.Bool

	// stopped is done once stop is called, which Serve does when the
	// shutdown grace runs out. It ends every MCP method handler's context
	// (see stoppable), including those of legacy sessions, which outlive
	// their HTTP request.
	stopped context.Context
	stop    context.CancelFunc

	mu      sync.Mutex      // guards counts, applied and writes to ledger
	counts  map[string]int  // mutations per key on this replica
	applied map[string]bool // key + NUL + op of mutations applied here
	ledger  io.Writer
	calls   *Gauge // nil: not counted

	eventStore bool // 2025-11-25 streams keep their events (Options.EventStore)
	stateless  bool // every request goes to the stateless handler (Options.Stateless)

	slots    slots        // admits and counts the tool calls running
	requests *requests    // nil: neither keep-alives nor stateless
	killed   atomic.Int64 // tool calls running when the shutdown grace ran out
}

// New returns a Server called name, which whoami reports and which must not
// be empty. A nil opts means the defaults documented on [Options].
func New(name string, opts *Options) (*Server, error) {
	if name == "" {
		return nil, errors.New("creating test server: empty name")
	}
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("creating test server %s: %w", name, err)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Era == "" {
		o.Era = EraBoth
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.ShutdownGrace == 0 {
		o.ShutdownGrace = ShutdownGrace
	}
	s := &Server{
		name:    name,
		opts:    o,
		era:     o.Era,
		grace:   o.ShutdownGrace,
		logger:  o.Logger,
		counts:  make(map[string]int),
		applied: make(map[string]bool),
		ledger:  o.Ledger,
		calls:   o.Calls,

		eventStore: o.EventStore,
		stateless:  o.Stateless,
		slots:      slots{n: o.Slots},
	}
	if o.KeepAlive > 0 || o.Stateless {
		s.requests = &requests{keepAlive: o.KeepAlive}
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: name, Version: "1.0.0"}, &mcp.ServerOptions{
		Logger:                    quiet(o.Logger),
		SupportedProtocolVersions: eraVersions(o.Era, o.Stateless),
		SetCacheable:              cacheTTL(o.CacheTTL),
		PageSize:                  o.PageSize,
	})
	s.stopped, s.stop = context.WithCancel(context.Background())
	s.mcp.AddReceivingMiddleware(s.stoppable)
	s.addTools()
	s.addResources()
	s.addPrompts()
	s.handler = s.routes()
	if o.Tracer != nil {
		s.handler = traced(o.Tracer, s.handler)
	}
	return s, nil
}

// Name returns the replica's name, the text whoami answers.
func (s *Server) Name() string { return s.name }

// Handler returns the HTTP handler serving /mcp and /health; any other path
// is 404.
func (s *Server) Handler() http.Handler { return s.handler }

// SetDraining makes /health answer 503 {"status":"draining"} from now on.
// The server keeps serving /mcp.
func (s *Server) SetDraining() { s.draining.Store(true) }

// Count returns how many times mutate has changed key on this replica.
func (s *Server) Count(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[key]
}

// Load returns how many tool calls run on this replica now and how many
// wait for a slot ([Options.Slots]).
func (s *Server) Load() (running, queued int) { return s.slots.load() }

// Killed returns how many tool calls were still running when the shutdown
// grace ran out, and were ended; calls waiting for a slot then are not
// counted. It is 0 until [Server.Serve] has given up waiting.
func (s *Server) Killed() int { return int(s.killed.Load()) }

// increment applies one mutation of key. With op (the call's idempotency
// key) it applies at most once per (key, op): in this replica's memory, and
// across the fleet and restarts when the ledger is a shared *Ledger. It
// reports whether it mutated.
func (s *Server) increment(key, op string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if op != "" {
		if s.applied[key+"\x00"+op] {
			return false
		}
		s.applied[key+"\x00"+op] = true
	}
	line := strconv.Quote(key) + " " + strconv.Quote(s.name) + " " + time.Now().UTC().Format(time.RFC3339Nano)
	if op != "" {
		line += " " + strconv.Quote(op)
	}
	line += "\n"
	if l, ok := s.ledger.(*Ledger); ok && op != "" {
		first, err := l.applyOnce(key, op, []byte(line))
		if err != nil {
			s.logger.Error("writing the ledger failed", "error", err)
		}
		if !first {
			return false
		}
	} else if s.ledger != nil {
		if _, err := io.WriteString(s.ledger, line); err != nil {
			s.logger.Error("writing the ledger failed", "error", err)
		}
	}
	s.counts[key]++
	return true
}

// stoppable is MCP middleware that ends the handler's context when s.stop
// is called, or, served stateless, when its HTTP request ends; counts the
// requests and tool calls in s.calls; arms the keep-alives of the request's
// stream; and runs each tool call in a slot.
func (s *Server) stoppable(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		unhook := context.AfterFunc(s.stopped, func() { cancel(errStopped) })
		defer unhook()
		if hr := s.requests.of(req); hr != nil {
			if hr.w != nil {
				hr.w.arm()
			}
			if s.stateless {
				// The SDK cancels a 2026-07-28 call when its POST closes
				// (PropagateRequestCancellation), not a 2025-11-25 one:
				// its notifications/cancelled arrives on another request,
				// where no session links the two. Do it for both.
				unlink := context.AfterFunc(hr.ctx, func() { cancel(context.Cause(hr.ctx)) })
				defer unlink()
			}
		}
		if s.calls != nil && !strings.HasPrefix(method, "notifications/") {
			s.calls.handled(method, readURI(req))
		}
		call, ok := req.(*mcp.CallToolRequest)
		if !ok {
			return next(ctx, method, req)
		}
		if err := s.slots.acquire(ctx); err != nil {
			return nil, fmt.Errorf("waiting for a slot: %w", err)
		}
		defer s.slots.release()
		if s.calls != nil && call.Params != nil {
			s.calls.enter(call.Params.Name)
			defer s.calls.leave(call.Params.Name)
		}
		return next(ctx, method, req)
	}
}

// routes builds the handler behind [Server.Handler].
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	h := s.mcpHandler()
	if s.requests != nil {
		h = s.requests.wrap(h)
	}
	mux.Handle("/mcp", s.inflight.track(h))
	mux.HandleFunc("/health", s.serveHealth)
	if s.era != Era2026 {
		// The 2024-11-05 HTTP+SSE transport over the same MCP server: GET
		// opens a session's stream, whose endpoint event names this path
		// with the session's ID, where its messages are POSTed.
		mux.Handle("/sse", mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return s.mcp },
			&mcp.SSEOptions{DisableLocalhostProtection: true})) // the gateway forwards with its own Host
	}
	if s.opts.ResourceMetadata {
		mux.HandleFunc("GET /.well-known/oauth-protected-resource", s.serveResourceMetadata)
		mux.HandleFunc("GET /.well-known/oauth-protected-resource/", s.serveResourceMetadata)
	}
	return mux
}

// serveResourceMetadata answers the protected-resource document of the
// path the request names after the well-known prefix ("" for the root).
func (s *Server) serveResourceMetadata(w http.ResponseWriter, r *http.Request) {
	resource := strings.TrimPrefix(r.URL.Path, "/.well-known/oauth-protected-resource")
	b, _ := json.Marshal(map[string]any{
		"resource":                 "http://" + r.Host + resource,
		"authorization_servers":    []string{"http://127.0.0.1:1/"},
		"bearer_methods_supported": []string{"header"},
		"mcpfleet_replica":         s.name,
	})
	w.Header().Set("Content-Type", "application/json")
	w.Write(append(b, '\n'))
}

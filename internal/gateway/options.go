package gateway

import (
	"cmp"
	"context"
	"github.com/mcpfleet/mcpfleet/internal/authz"
	"io"
	"net"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpfleet/mcpfleet/internal/admin"
	"github.com/mcpfleet/mcpfleet/internal/balance"
	"github.com/mcpfleet/mcpfleet/internal/cache"
	"github.com/mcpfleet/mcpfleet/internal/idem"
	"github.com/mcpfleet/mcpfleet/internal/identity"
	"github.com/mcpfleet/mcpfleet/internal/limit"
	"github.com/mcpfleet/mcpfleet/internal/session"
	"github.com/mcpfleet/mcpfleet/internal/streams"
	"github.com/prometheus/client_golang/prometheus"
)

// Options configures a Gateway. The zero value of each field means the
// default its comment gives.
type Options struct {
	// Tracer, when not nil, traces every request by the OpenTelemetry
	// semantic conventions for MCP (trace.go); nil turns tracing off.
	Tracer trace.Tracer
	// Meter, with Tracer, records mcp.server.operation.duration and
	// mcp.client.operation.duration for export; nil records them on
	// /metrics only.
	Meter metric.Meter
	// Path is where the MCP endpoint is served; "" means "/mcp".
	Path string
	// Balance is how new sessions and 2026-07-28 requests spread over the
	// fleet; the zero value is hash (consistent hashing of the caller with
	// bounded loads).
	Balance balance.Policy
	// HashEpsilon is the load bound of the hash policy: a replica with more
	// than (1+HashEpsilon) times the average in flight passes new work on.
	// 0 means 0.25; a negative value turns the bound off.
	HashEpsilon float64
	// HashMinLoad is the floor under the bound: a replica with fewer
	// requests in flight never passes its callers on. 0 means 10; a
	// negative value means no floor.
	HashMinLoad int64
	// SharedSessions says the replicas share their 2025-11-25 sessions (a
	// shared session store, or stateless servers): a session's requests
	// are balanced like new work instead of going to the replica that
	// minted the session.
	SharedSessions bool
	// Proxies are the peers trusted to name the client in a header, for the
	// address of callers without a credential; nil trusts nobody.
	Proxies *identity.Proxies
	// KeepAlive is the interval of SSE keep-alive comments on every relayed
	// stream; 0 means 15 s, a negative value turns them off.
	KeepAlive time.Duration
	// MaxBodyBytes bounds a request body (413 beyond it); 0 means 4 MiB.
	MaxBodyBytes int64
	// MaxBatch bounds the messages of a JSON-RPC batch, where the
	// request's protocol version still allows batches (400 beyond it);
	// 0 means DefaultMaxBatch.
	MaxBatch int
	// MaxEventBytes bounds one relayed SSE event; 0 means 16 MiB.
	MaxEventBytes int
	// BodyReadTimeout bounds the time to read a request body, so slow
	// clients cannot hold a request open; 0 means 30 s.
	BodyReadTimeout time.Duration
	// WriteTimeout bounds each write to a client (one event, one chunk), so
	// a client that stops reading is cut; 0 means 30 s.
	WriteTimeout time.Duration
	// Retries bounds how often an undelivered request moves on to another
	// replica; 0 means 1, a negative value means never.
	Retries int
	// DialTimeout bounds connecting to a replica; 0 means 5 s.
	DialTimeout time.Duration
	// ChildView, when not nil, returns the child process and last stderr
	// lines of a replica that is a stdio child, for the fleet view; nil
	// for any other replica.
	ChildView func(replica string, now time.Time) (*admin.Process, []string)
	// Dial, when not nil, connects to replicas in place of a net.Dialer
	// (with DialTimeout): it reaches the stdio children's bridges on their
	// unix sockets, and hands every other address to the network.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Local, when not nil, names the handler in this process that serves
	// a replica's host (a stdio child's bridge), or nil for a replica
	// that is none: a POST to its MCP endpoint calls it directly, without
	// a round trip on its socket (localforward.go).
	Local func(host string) http.Handler
	// AllowAnyHost turns off DNS-rebinding protection: by default a request
	// that arrives on a loopback address must name a loopback Host, or it
	// gets 403. Turn it off when a local proxy forwards with a public Host.
	AllowAnyHost bool
	// AllowedHosts pins the names a request's Host may give (exact, or
	// *. and one label), whatever the listener's address; nil keeps the
	// default above (loopback names on a loopback listener, else any).
	AllowedHosts []string
	// AllowedOrigins may send requests besides pages of the request's own
	// host (scheme://host[:port]); "*" turns the Origin check off. A
	// request without Origin always passes: non-browser clients send none.
	AllowedOrigins []string
	// Keyring seals and opens legacy session IDs. nil means a random key:
	// sessions then do not survive a restart, and other gateway processes
	// cannot open them.
	Keyring *session.Keyring
	// RoutingSalt keys the HMAC that turns caller identities into routing
	// keys; nil means a random salt (routing then differs between gateway
	// processes). At least 16 bytes. The key of session openers' digests
	// is derived from it too.
	RoutingSalt []byte
	// NoSessionBinding turns off binding sessions, 2024-11-05 endpoints
	// and tasks to the caller that opened them (binding.go): any caller
	// holding an ID may then use it, as before binding existed.
	NoSessionBinding bool
	// SessionMaxAge ends a sealed session ID or 2024-11-05 endpoint this
	// long after it was issued (404, -32001); 0 means 24 h, a negative
	// value never ends one by its age.
	SessionMaxAge time.Duration
	// Idempotency keeps the records that make a re-issued call run once;
	// nil means an in-memory store (one gateway process). Set NoIdempotency
	// to turn deduplication off.
	Idempotency   idem.Store
	NoIdempotency bool
	// IdempotencyLease bounds how long a running call holds its record
	// (a crashed gateway's claim ends then); 0 means 15 min.
	IdempotencyLease time.Duration
	// IdempotencyTTL is how long a recorded answer is kept; 0 means 24 h.
	IdempotencyTTL time.Duration
	// MaxTasks bounds the in-memory task registry; 0 means 100,000.
	MaxTasks int
	// Tasks remembers which replica runs each task; nil means in memory
	// (one gateway process). Share a redistasks.Store so that tasks/*
	// reach their replica through every gateway process.
	Tasks session.TaskStore
	// Limits admits governed calls (rate, concurrency, tool caps); nil
	// admits everything. The caller creates and closes it.
	Limits *limit.Limiter
	// Capacity holds each replica's requests in flight to its
	// MaxInflight, counted over every gateway that shares its store (a
	// limiter over a store of its own: the Redis store for a fleet, a
	// memory store for one process); nil holds nothing. The caller creates
	// and closes it.
	Capacity *limit.Limiter
	// MaxInflight caps the requests in flight at each named replica;
	// DefaultMaxInflight applies to replicas it does not name (discovered
	// ones). 0 means no cap.
	MaxInflight        map[string]int
	DefaultMaxInflight int
	// QueueTimeout is how long a request that finds every replica it may
	// go to at its cap waits for a place; 0 answers it at once (503 with
	// Retry-After).
	QueueTimeout time.Duration
	// QueueSize bounds how many requests wait for a place at once; 0
	// means 1,024. Past it a request is answered at once.
	QueueSize int
	// Tools, when not nil, lists every replica's tools, routes each
	// tools/call among the replicas that declare its tool, and holds the
	// replicas to a lock (docs/GATEWAY.md, "Tools across the fleet").
	Tools *ToolOptions
	// UpstreamPoolSize bounds the connections open to each replica, idle
	// ones included; 0 means no bound. Past it a request waits for one.
	UpstreamPoolSize int
	// Cache keeps answers that may be given again (SEP-2549 hints and
	// CacheRules.Tools); nil means no cache.
	Cache cache.Store
	// Auth, when not nil, verifies every MCP request's bearer JWT before
	// any replica sees it (401 otherwise); the verified iss and sub are the
	// caller. nil means no verification: the replicas authenticate.
	Auth *identity.Verifier
	// Authz are the authorization rules (SetAuthz replaces them); nil
	// means none: every request is allowed.
	Authz *authz.Policy
	// AuthResourceMetadata is the URL a 401's challenge names; "" means
	// the well-known URL at the origin the client used.
	AuthResourceMetadata string
	// AuthResource is the protected resource's identifier in the metadata
	// the gateway serves (RFC 9728 section 2, "resource"); "" means the
	// listener's scheme, the request's Host (one the Host guard took) and
	// Path.
	AuthResource string
	// AuthorizationServers are the metadata's authorization_servers; none
	// leaves the member out.
	AuthorizationServers []string
	// AuthScopesSupported are the metadata's scopes_supported, and the
	// scope a 401's challenge asks for; none leaves both out.
	AuthScopesSupported []string
	// PassthroughPaths go to a replica as they are, any method, besides the
	// OAuth discovery documents (/.well-known/oauth-protected-resource,
	// oauth-authorization-server, openid-configuration, and their
	// path-suffixed forms), which always do, GET and HEAD. A path ending in
	// "/" covers everything under it.
	PassthroughPaths []string
	// HealthCheckInterval and HealthCheckTimeout are those of the fleet's
	// active checks (upstream.Checker), which the caller runs; a zero
	// interval means none run. With checks, /readyz answers 503
	// {"status":"starting"} until every replica has had its first check,
	// for at most the interval plus the timeout (0 means 1 s) from New;
	// and a request that no replica can take is told to come back after
	// the interval (Retry-After, at least 1 s).
	HealthCheckInterval time.Duration
	HealthCheckTimeout  time.Duration
	// StoreCheck, when not nil, says whether the stores the gateway needs
	// answer (a ping); while it fails /readyz answers 503. It is asked at
	// most once a second, with a 500 ms deadline.
	StoreCheck func(context.Context) error
	// Stores lists the shared state the gateway uses and where it lives,
	// for the fleet view (GET /api/fleet); nil shows none.
	Stores []StoreInfo
	// Streams keeps the events of legacy streams whose client went away,
	// for a resume through any gateway process that shares it (a
	// redisstreams.Store); nil means this process's memory only.
	Streams streams.Buffer
	// StreamLimits bound what this process keeps of legacy streams: the
	// grace (TTL) after which a stream nobody resumed is forgotten, and the
	// bytes per stream and in total; zero fields mean streams' defaults.
	StreamLimits streams.Options
	// ResumeRetry is the reconnection delay (SEP-1699 retry) the gateway
	// sends when it ends a legacy stream itself; 0 means 1 s.
	ResumeRetry time.Duration
	// CacheRules are the operator's caching choices. A zero MaxTTL means
	// one hour, a zero ToolTTL 60 s.
	CacheRules cache.Rules
	// SSEPath is where the deprecated 2024-11-05 HTTP+SSE transport opens
	// its streams (GET); "" means "/sse". SSEMessagesPath is where its
	// messages are POSTed; "" means "/messages". NoSSE turns the transport
	// off: both paths are then 404.
	SSEPath         string
	SSEMessagesPath string
	NoSSE           bool
	// AccessLog, when set, is the writer under the Logger's handler, which
	// must be slog.NewJSONHandler with no options but its level: the access
	// log line of each request is then put together by the gateway itself
	// (accesslog.go), byte for byte as that handler would write it, and
	// written there in one Write, at a tenth of slog's cost. nil: the line
	// goes through the Logger.
	AccessLog io.Writer
	// Audit, when set, gets the audit log's lines (audit.go): one JSON
	// line, in one Write, per authorization decision and per tools/call,
	// prompts/get and resources/read. nil: no audit log.
	Audit io.Writer
	// AuditSubject puts the verified token's sub in the audit lines; by
	// default they name the caller by its salted digest alone.
	AuditSubject bool
	// Service names the MCP service this gateway serves among several of
	// one process (Services): every metric then carries it as the service
	// label. "" is a process's only service, unlabelled.
	Service string
	// Registry is where the metrics go; nil means a registry of the
	// gateway's own. Several services share one, each under its label.
	Registry *prometheus.Registry
	// MemoryLimit is the process's memory budget in bytes (memory.go): as
	// the process nears it the gateway stops keeping streams whose client
	// reads, then refuses new streams and sessions. 0 means none.
	MemoryLimit int64
	// MemoryUsed reads the process's memory; nil means the Go runtime's
	// figure (memory held from the system, less what it released).
	MemoryUsed func() uint64
}

// DefaultQueueSize bounds the requests that wait for a replica's place
// unless Options.QueueSize says otherwise.
const DefaultQueueSize = 1024

func (o *Options) withDefaults() Options {
	var v Options
	if o != nil {
		v = *o
	}
	def := func(d *time.Duration, x time.Duration) {
		if *d == 0 {
			*d = x
		}
	}
	if v.Path == "" {
		v.Path = "/mcp"
	}
	switch {
	case v.NoSSE:
		v.SSEPath, v.SSEMessagesPath = "", ""
	default:
		v.SSEPath = cmp.Or(v.SSEPath, "/sse")
		v.SSEMessagesPath = cmp.Or(v.SSEMessagesPath, "/messages")
	}
	def(&v.KeepAlive, 15*time.Second)
	def(&v.BodyReadTimeout, 30*time.Second)
	def(&v.WriteTimeout, 30*time.Second)
	def(&v.DialTimeout, 5*time.Second)
	def(&v.ResumeRetry, time.Second)
	def(&v.SessionMaxAge, 24*time.Hour)
	def(&v.IdempotencyLease, 15*time.Minute)
	def(&v.IdempotencyTTL, 24*time.Hour)
	switch {
	case v.NoIdempotency:
		v.Idempotency = nil
	case v.Idempotency == nil:
		v.Idempotency = idem.NewMemory(nil)
	}
	def(&v.CacheRules.MaxTTL, time.Hour)
	def(&v.CacheRules.ToolTTL, time.Minute)
	if v.Tasks == nil {
		v.Tasks = session.NewTasks(v.MaxTasks)
	}
	if v.MaxBodyBytes == 0 {
		v.MaxBodyBytes = 4 << 20
	}
	if v.MaxBatch <= 0 {
		v.MaxBatch = DefaultMaxBatch
	}
	switch {
	case v.HashEpsilon == 0:
		v.HashEpsilon = balance.DefaultEpsilon
	case v.HashEpsilon < 0:
		v.HashEpsilon = 0
	}
	switch {
	case v.HashMinLoad == 0:
		v.HashMinLoad = balance.DefaultMinLoad
	case v.HashMinLoad < 0:
		v.HashMinLoad = 0
	}
	if v.QueueSize == 0 {
		v.QueueSize = DefaultQueueSize
	}
	if v.MaxEventBytes == 0 {
		v.MaxEventBytes = 16 << 20
	}
	switch {
	case v.Retries == 0:
		v.Retries = balance.DefaultRetries
	case v.Retries < 0:
		v.Retries = 0
	}
	return v
}

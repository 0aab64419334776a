package stdio

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
)

// Header names of the Streamable HTTP transport (MCP 2025-11-25,
// "Transports").
const (
	headerSession  = "Mcp-Session-Id"
	headerProtocol = "Mcp-Protocol-Version"
)

// mcpPath is the MCP endpoint of a bridge (URL).
const mcpPath = "/mcp"

// maxBody bounds a request body the bridge reads; the gateway bounds them
// before, with its own limit.
const maxBody = 64 << 20

// A Bridge serves one child as a Streamable HTTP replica, so that the
// gateway routes to it, checks it and counts it as any replica: its MCP
// endpoint at /mcp, and on every other path its health: 200 while the
// child is initialized, 503 otherwise. A 2025-11-25 session is a Session on
// the child; a 2026-07-28 request is a session of its own, for that
// request alone (stateless.go). The gateway reaches it on a socket only
// it can open (Listen).
type Bridge struct {
	child *Child
	log   *slog.Logger
	// idle ends a session with no request, call or stream for this long
	// (checked at each new session); 0: never.
	idle time.Duration
	// pool, when not nil, gives each session a child of its own
	// (per_session); the bridge's child then serves 2026-07-28 requests.
	pool *Pool
	// tools are the Mcp-Param-* bindings of the child's tools.
	tools toolHeaders
	// twin serves the 2026-07-28 requests natively when the server speaks
	// that era (twin.go); nil: they are translated.
	twin *twin

	mu       sync.Mutex // guards sessions
	sessions map[string]*bsession
}

// NewBridge returns the bridge of c. With pool, each 2025-11-25 session
// gets a child of pool's, and c serves the 2026-07-28 requests alone.
// With twin, the options of a second child of c's command (its own name
// and environment), that child, the replica's stateless twin, is started
// at the first 2026-07-28 request and serves them natively when the
// server speaks that era (twin.go); nil: they are translated on c.
func NewBridge(c *Child, idle time.Duration, pool *Pool, twin *Options) *Bridge {
	return &Bridge{child: c, log: c.opts.Logger.With("child", c.opts.Name), idle: idle, pool: pool, twin: newTwin(twin), sessions: map[string]*bsession{}}
}

// Close stops the bridge's child and its stateless twin, at once, and
// waits for their process groups; idempotent.
func (b *Bridge) Close() {
	var wg sync.WaitGroup
	wg.Go(b.twin.close)
	b.child.Close()
	wg.Wait()
}

// StatelessChild returns the state of the bridge's stateless twin; false
// before it started, or without one.
func (b *Bridge) StatelessChild() (Info, bool) {
	c := b.twin.running()
	if c == nil {
		return Info{}, false
	}
	return c.Info(), true
}

// sessionCount is how many sessions the bridge's child holds now, and
// requests its twin serves.
func (b *Bridge) sessionCount() int {
	n := b.child.sessionCount()
	if c := b.twin.running(); c != nil {
		n += c.sessionCount()
	}
	return n
}

// SessionChildren returns the state of the children of this bridge's
// sessions (per_session), by name.
func (b *Bridge) SessionChildren() []Info {
	b.mu.Lock()
	var cs []*Child
	for _, s := range b.sessions {
		if s.lease != nil {
			cs = append(cs, s.lease.Child())
		}
	}
	b.mu.Unlock()
	infos := make([]Info, 0, len(cs))
	for _, c := range cs {
		infos = append(infos, c.Info())
	}
	slices.SortFunc(infos, func(a, b Info) int { return strings.Compare(a.Name, b.Name) })
	return infos
}

// sweep ends the sessions idle for b.idle by now: a client that never
// sent DELETE (whose sealed ID the gateway no longer opens, when idle is
// its session_max_age) holds nothing on the child for ever.
func (b *Bridge) sweep(now time.Time) {
	if b.idle <= 0 {
		return
	}
	var ended []*bsession
	b.mu.Lock()
	for id, s := range b.sessions {
		if s.idleSince(now) >= b.idle {
			delete(b.sessions, id)
			ended = append(ended, s)
		}
	}
	b.mu.Unlock()
	for _, s := range ended {
		s.close()
	}
}

// ServeHTTP serves the child's MCP endpoint and its health.
func (b *Bridge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != mcpPath {
		b.serveHealth(w)
		return
	}
	sid := r.Header.Get(headerSession)
	switch r.Method {
	case http.MethodPost:
		b.servePost(w, r, sid)
	case http.MethodGet:
		if s := b.session(sid); s != nil {
			s.touch(time.Now())
			s.serveStream(w, r)
			return
		}
		writeError(w, nil, sessionGone(sid))
	case http.MethodDelete:
		if s := b.take(sid); s != nil {
			s.close()
			w.WriteHeader(http.StatusOK)
			return
		}
		writeError(w, nil, sessionGone(sid))
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		writeError(w, nil, &mcpmsg.Error{Status: http.StatusMethodNotAllowed, Code: mcpmsg.CodeInvalidRequest, Message: "method not allowed"})
	}
}

func (b *Bridge) serveHealth(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	if b.child.Info().Ready {
		_, _ = w.Write([]byte(`{"status":"ok"}`))
		return
	}
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write([]byte(`{"status":"starting"}`))
}

func sessionGone(sid string) *mcpmsg.Error {
	if sid == "" {
		return &mcpmsg.Error{Status: http.StatusBadRequest, Code: mcpmsg.CodeInvalidRequest, Message: "Mcp-Session-Id required"}
	}
	return &mcpmsg.Error{Status: http.StatusNotFound, Code: mcpmsg.CodeSessionNotFound, Message: "session not found"}
}

func (b *Bridge) session(sid string) *bsession {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sessions[sid]
}

func (b *Bridge) take(sid string) *bsession {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.sessions[sid]
	delete(b.sessions, sid)
	return s
}

// servePost serves one POSTed message.
func (b *Bridge) servePost(w http.ResponseWriter, r *http.Request, sid string) {
	body, err := readBody(r)
	if err != nil {
		writeError(w, nil, &mcpmsg.Error{Status: http.StatusBadRequest, Code: mcpmsg.CodeParseError, Message: err.Error()})
		return
	}
	m, err := mcpmsg.Parse(body)
	switch {
	case err != nil:
		writeError(w, nil, &mcpmsg.Error{Status: http.StatusBadRequest, Code: mcpmsg.CodeParseError, Message: "parse error"})
		return
	case m.Batch:
		writeError(w, nil, &mcpmsg.Error{Status: http.StatusBadRequest, Code: mcpmsg.CodeInvalidRequest, Message: ErrBatch.Error()})
		return
	}
	// A request without a session that names a version in _meta, one
	// newer than this gateway knows included, is of the sessionless era:
	// it is refused there with the versions that are served (SEP-2575).
	if mcpmsg.EraOf(sid, r.Header.Get(headerProtocol), &m) == mcpmsg.EraStateless ||
		sid == "" && m.Method != "initialize" && metaVersion(body) != "" {
		b.serveStateless(w, r, body, &m)
		return
	}
	if sid == "" && m.Method == "initialize" && m.Kind == mcpmsg.KindRequest {
		b.initialize(w, r, body, m.ID)
		return
	}
	s := b.session(sid)
	if s == nil {
		writeError(w, m.ID, sessionGone(sid))
		return
	}
	s.touch(time.Now())
	if m.Kind != mcpmsg.KindRequest {
		if err := s.s.Send(body); err != nil {
			writeError(w, nil, sendError(err))
			return
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	s.serveCall(w, r, body, m.ID)
}

// initialize opens a session on the child, or on a child of its own
// (per_session), and answers from the child's own initialize result: the
// child was initialized once, by the gateway.
func (b *Bridge) initialize(w http.ResponseWriter, r *http.Request, body []byte, id []byte) {
	cs, lease, err := b.open(r)
	if err != nil {
		writeError(w, id, &mcpmsg.Error{Status: http.StatusServiceUnavailable, Code: mcpmsg.CodeInternalError, Message: err.Error(), RetryAfter: time.Second})
		return
	}
	result := negotiate(cs.Initialize(), body)
	b.sweep(time.Now())
	sid := newSessionID()
	s := newBSession(cs, lease, func() { b.take(sid) })
	b.mu.Lock()
	b.sessions[sid] = s
	b.mu.Unlock()
	w.Header().Set(headerSession, sid)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(appendResult(nil, id, string(result)))
}

// open opens a new session's Session: on the bridge's child, or with a
// pool on a child of the pool's, whose lease the session then holds.
func (b *Bridge) open(r *http.Request) (*Session, *Lease, error) {
	if b.pool == nil {
		cs, err := b.child.Open()
		return cs, nil, err
	}
	lease, err := b.pool.Take(r.Context())
	if err != nil {
		return nil, nil, err
	}
	return lease.Session(), lease, nil
}

// negotiate returns the child's initialize result for a client: with the
// client's protocolVersion when it asked for an older one than the
// child's (MCP 2025-11-25, "Version Negotiation": the server answers a
// version it supports; the child supports the versions before its own
// alike, as far as a session's messages go).
func negotiate(result json.RawMessage, body []byte) json.RawMessage {
	var req struct {
		Params struct {
			Version string `json:"protocolVersion"`
		} `json:"params"`
	}
	var res envelope
	if json.Unmarshal(body, &req) != nil || json.Unmarshal(result, &res) != nil {
		return result
	}
	var childV string
	_ = json.Unmarshal(res["protocolVersion"], &childV)
	if v := req.Params.Version; v == "" || v >= childV || !isLegacyVersion(v) {
		return result
	}
	res["protocolVersion"], _ = json.Marshal(req.Params.Version)
	out, err := json.Marshal(res)
	if err != nil {
		return result
	}
	return out
}

// isLegacyVersion reports a dated version of the session era.
func isLegacyVersion(v string) bool {
	return len(v) == len("2025-11-25") && v >= "2024-11-05" && !mcpmsg.IsStatelessVersion(v)
}

func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func readBody(r *http.Request) ([]byte, error) {
	defer r.Body.Close()
	return io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBody))
}

func sendError(err error) *mcpmsg.Error {
	if err == ErrSessionEnded {
		return &mcpmsg.Error{Status: http.StatusNotFound, Code: mcpmsg.CodeSessionNotFound, Message: "session not found"}
	}
	return &mcpmsg.Error{Status: http.StatusBadRequest, Code: mcpmsg.CodeInvalidRequest, Message: err.Error()}
}

// writeError answers with e as JSON, for id.
func writeError(w http.ResponseWriter, id []byte, e *mcpmsg.Error) {
	w.Header().Set("Content-Type", "application/json")
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(e.Status)
	_, _ = w.Write(e.AppendResponse(nil, id))
}

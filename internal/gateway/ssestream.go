package gateway

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
	"github.com/mcpfleet/mcpfleet/internal/session"
	"github.com/mcpfleet/mcpfleet/internal/sse"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// The deprecated 2024-11-05 HTTP+SSE transport (2024-11-05 transports,
// "HTTP with SSE"): a client opens a session with a GET on the SSE
// endpoint; the server's first event, "endpoint", names a URI to which the
// client POSTs every message, and the answers come back on the stream. The
// session lives in the one replica that holds the stream, and the endpoint
// URI (the replica's session ID in its query) is all a POST carries to find
// it. So the gateway picks the stream's replica as for a new session, and
// rewrites the endpoint event to its own messages path with the replica's
// name and endpoint sealed in the query (session.Endpoint): any gateway
// process with the key sends a POST on to its replica, and the client sees
// neither the replica's address nor its session ID. There is no store, and
// nothing to clean up when a stream ends.

// serveSSE serves the transport's two paths, after the checks every MCP
// request passes (Host, token, method); it reports false for other paths.
func (g *Gateway) serveSSE(w http.ResponseWriter, r *http.Request) bool {
	var serve func(http.ResponseWriter, *http.Request, *request, *record)
	method := http.MethodGet
	switch {
	case g.opts.SSEPath == "":
		return false
	case r.URL.Path == g.opts.SSEPath:
		serve = g.serveSSEStream
	case r.URL.Path == g.opts.SSEMessagesPath:
		serve, method = g.serveSSEMessage, http.MethodPost
	default:
		return false
	}
	rec := g.begin(r)
	defer g.finish(rec)
	q := &request{label: r.Method, era: mcpmsg.EraSSE}
	rec.q = q
	if e := g.edgeRefusal(r); e != nil {
		rec.reject(w, e, nil)
		return true
	}
	verified, ok := g.authenticate(w, r, rec)
	if !ok {
		return true
	}
	q.verified = verified
	g.identify(r, q)
	if r.Method != method {
		w.Header().Set("Allow", method)
		rec.reject(w, errMethod, nil)
		return true
	}
	if method == http.MethodGet && g.refuseForMemory(w, r, q, rec) {
		return true // a new stream is a new session of this transport
	}
	if method == http.MethodGet && g.tr != nil {
		r = g.startSpan(r, q, rec) // one span for the stream's life, its events as span events
	}
	serve(w, r, q, rec)
	return true
}

// serveSSEStream opens a session's stream on a replica picked as for a new
// session (the balance policy; eligible replicas only), at the replica's
// SSE URL, and relays it with keep-alives and its endpoint events
// rewritten. The stream is a standalone GET: the client leaving ends it
// upstream, and so does shutdown.
func (g *Gateway) serveSSEStream(w http.ResponseWriter, r *http.Request, q *request, rec *record) {
	if g.standalone.Err() != nil {
		// Forwarded, it would go under a context already ended and get
		// 502; a retry a second later reaches the gateway that takes
		// this one's place.
		rec.reject(w, errClosing, nil)
		return
	}
	ctx, release := g.upstreamContext(r, q)
	defer release()
	rec.upstream = ctx
	res := g.send(ctx, r, q, target{snap: g.fleet.Snapshot()}, rec)
	if res.err != nil {
		rec.reject(w, res.err, nil)
		return
	}
	resp, rep := res.resp, res.rep
	defer rep.Release()
	resp.Header.Del(mcpmsg.HeaderSessionID) // no replica's own ID reaches the client
	if isEventStream(resp.Header.Get("Content-Type")) {
		// The session's calls, answered here if the replica goes
		// (lostrelay.go).
		rec.calls = &calls{}
		resp.Body = &endpointRewriter{g: g, r: r, rep: rep, opener: q.caller, body: resp.Body, rd: sse.NewReader(resp.Body, g.opts.MaxEventBytes), calls: rec.calls}
	}
	defer resp.Body.Close()
	g.relay(w, r, q, resp, rec)
}

// endpointRewriter hands a replica's stream on to the relay with every
// endpoint event rewritten (rewriteEndpoint), the other events as they
// came. An event left unfinished when the stream ends is dropped, not
// handed on: it may be an endpoint event not yet rewritten, and a client
// dispatches no unfinished event anyway (WHATWG HTML, "Event stream
// interpretation").
type endpointRewriter struct {
	g   *Gateway
	r   *http.Request
	rep *upstream.Replica
	// opener is who opened the stream: its endpoints are sealed for it.
	opener session.Opener
	body   io.Closer // the replica's
	rd     *sse.Reader
	out    []byte // what is left of the current event
	err    error  // the error that ended the stream, once it has ended
	// calls are the session's, followed under each endpoint the stream
	// named (keys) until it ends.
	calls *calls
	keys  []string
}

func (e *endpointRewriter) Read(p []byte) (int, error) {
	for len(e.out) == 0 {
		if e.err != nil {
			return 0, e.err
		}
		block, err := e.rd.Next()
		if err != nil {
			e.err = err
			continue
		}
		if bytes.Contains(block, []byte("endpoint")) && sse.Parse(block).Type == "endpoint" {
			var target string
			if block, target, err = e.g.rewriteEndpoint(block, e.rep, e.r, e.opener); err != nil {
				// Not the endpoint: it holds the replica's session ID.
				e.g.log.Warn("refusing a 2024-11-05 endpoint event", "replica", e.rep.Name(), "reason", err.Error())
				e.err = err
				continue
			}
			key := sseCallKey(e.rep.Name(), target)
			e.g.sseCalls.follow(key, e.calls)
			e.keys = append(e.keys, key)
		}
		e.out = block
	}
	n := copy(p, e.out)
	e.out = e.out[n:]
	return n, nil
}

// Reasons an endpoint event is refused; the stream then ends.
var (
	errEndpointURI    = errors.New("endpoint is not a URI reference")
	errEndpointOrigin = errors.New("endpoint is on another origin than the replica's SSE URL")
	errEndpointSeal   = errors.New("endpoint too long to seal")
)

// rewriteEndpoint turns a replica's endpoint event into the gateway's: the
// data names the gateway's messages path, its sessionId the sealed replica
// name and endpoint (target, returned too), bound to opener; every other
// line stays as the replica wrote it.
func (g *Gateway) rewriteEndpoint(block []byte, rep *upstream.Replica, r *http.Request, opener session.Opener) ([]byte, string, error) {
	target, err := endpointTarget(string(sse.Parse(block).Data), rep.SSEURL(), r.Host)
	if err != nil {
		return nil, "", err
	}
	token, err := g.keys.SealEndpoint(session.Endpoint{Replica: rep.Name(), Target: target, Issued: time.Now(), Opener: opener}, rand.Reader)
	if err != nil {
		return nil, "", errEndpointSeal
	}
	return replaceData(block, g.opts.SSEMessagesPath+"?sessionId="+token), target, nil
}

// endpointTarget resolves the URI of an endpoint event against the
// replica's SSE URL (it may be relative or absolute: the TypeScript and
// Python SDKs send a path and query, mcp-go may send a full URL) and
// returns its path and query, the request target of the replica's
// messages. The gateway forwards only to replicas: an endpoint on another
// origin is refused, unless it is the origin the client used, which a
// replica building its URLs from X-Forwarded-Host names.
func endpointTarget(data string, sseURL *url.URL, clientHost string) (string, error) {
	// One URI on one data line: a line break (two data lines joined) is
	// no URI, and the rewrite puts one value back.
	ref, err := url.Parse(data)
	if err != nil || data == "" || ref.Opaque != "" || strings.ContainsAny(data, "\r\n") {
		return "", errEndpointURI
	}
	u := sseURL.ResolveReference(ref)
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", errEndpointURI
	}
	if u.Host != sseURL.Host && u.Host != clientHost {
		return "", errEndpointOrigin
	}
	target := u.EscapedPath()
	if target == "" {
		target = "/" // an origin alone: its root
	}
	if u.RawQuery != "" {
		target += "?" + u.RawQuery
	}
	for i := 0; i < len(target); i++ {
		// Visible ASCII only: it becomes a request line's target.
		if target[i] <= ' ' || target[i] >= 0x7f {
			return "", errEndpointURI
		}
	}
	return target, nil
}

// replaceData returns the event block with the value of its data line
// replaced, keeping the line's own "data:" or "data: " and line end.
// Endpoint events have one data line (a URI has no line break in it).
func replaceData(block []byte, value string) []byte {
	out := make([]byte, 0, len(block)+len(value))
	for len(block) > 0 {
		line, rest, found := bytes.Cut(block, []byte{'\n'})
		block = rest
		body := bytes.TrimSuffix(line, []byte{'\r'})
		if name, _, _ := bytes.Cut(body, []byte{':'}); string(name) == "data" {
			prefix := "data:"
			if bytes.HasPrefix(body, []byte("data: ")) {
				prefix = "data: "
			}
			out = append(append(out, prefix...), value...)
			out = append(out, line[len(body):]...)
		} else {
			out = append(out, line...)
		}
		if found {
			out = append(out, '\n')
		}
	}
	return out
}

// Close closes the replica's stream, and stops following its calls.
func (e *endpointRewriter) Close() error {
	for _, key := range e.keys {
		e.g.sseCalls.forget(key, e.calls)
	}
	e.keys = nil
	return e.body.Close()
}

var _ io.ReadCloser = (*endpointRewriter)(nil)

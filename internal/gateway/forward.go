package gateway

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/h1"
	"github.com/mcpfleet/mcpfleet/internal/identity"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// forwarder is the forwarding path: it sends one request to one replica and
// says whether a failure happened before the request could have arrived. It
// is the one place to replace for a faster transport.
type forwarder interface {
	// forward sends in (with body) to rep; a non-empty sessionID replaces
	// the client's Mcp-Session-Id with the replica's own. target is the
	// request target at the replica; "" means its MCP endpoint.
	forward(ctx context.Context, rep *upstream.Replica, in *http.Request, body []byte, sessionID, target string) (resp *http.Response, delivered bool, err error)
	// forwardAt is forward to another endpoint of a replica (its
	// 2024-11-05 SSE endpoint): to base's origin, and base's own request
	// target when target is "". With closing (the replica is leaving, see
	// upstream.Replica.Leaving) the request goes on a new connection with
	// "Connection: close" and the replica's idle connections are closed, so
	// that no request is written on a connection the replica is closing.
	forwardAt(ctx context.Context, base *url.URL, closing bool, in *http.Request, body []byte, sessionID, target string) (resp *http.Response, delivered bool, err error)
}

// httpForwarder forwards over net/http's Transport with a per-replica pool of
// kept-alive connections.
type httpForwarder struct {
	t *http.Transport
	// closing is t without keep-alives, for leaving replicas: each request
	// on a connection of its own, with "Connection: close".
	closing *http.Transport
	proxies *identity.Proxies // who may name the client; nil: nobody
	// leaving holds the hosts whose replicas were leaving at their last
	// request, so that t's idle connections are closed once per departure.
	leaving sync.Map
}

var _ forwarder = (*httpForwarder)(nil)

// dialer returns dial, or when nil a net.Dialer's, bounded by timeout.
func dialer(timeout time.Duration, dial dialFunc) dialFunc {
	if dial != nil {
		return func(ctx context.Context, network, addr string) (net.Conn, error) {
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			return dial(ctx, network, addr)
		}
	}
	d := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	return d.DialContext
}

func newHTTPForwarder(dial dialFunc, proxies *identity.Proxies) *httpForwarder {
	t := &http.Transport{
		DialContext:         dial,
		MaxIdleConns:        4096,
		MaxIdleConnsPerHost: 1024,
		IdleConnTimeout:     90 * time.Second,
		// Bodies pass through as the replica encoded them.
		DisableCompression: true,
		ForceAttemptHTTP2:  false,
	}
	closing := t.Clone()
	closing.DisableKeepAlives = true
	return &httpForwarder{t: t, closing: closing, proxies: proxies}
}

// setMaxConnsPerHost bounds the connections to each replica; 0: no bound.
func (f *httpForwarder) setMaxConnsPerHost(n int) {
	f.t.MaxConnsPerHost, f.closing.MaxConnsPerHost = max(0, n), max(0, n)
}

// transport is the Transport for a request to host: the closing one while
// its replica is leaving. The first request to a leaving replica closes
// the idle connections of the shared Transport, which cannot close one
// host's alone: the other replicas' are dialled again, once per departure.
func (f *httpForwarder) transport(host string, closing bool) *http.Transport {
	if !closing {
		if _, was := f.leaving.Load(host); was {
			f.leaving.Delete(host)
		}
		return f.t
	}
	if _, was := f.leaving.LoadOrStore(host, struct{}{}); !was {
		f.t.CloseIdleConnections()
	}
	return f.closing
}

// forward sends the request. delivered is false only when no byte of the
// request was written on any connection: the dial failed, or the TLS
// handshake, or the context ended first. Once a header field went out the
// request counts as delivered, even if it may still sit in a buffer: when in
// doubt, never send twice.
func (f *httpForwarder) forward(ctx context.Context, rep *upstream.Replica, in *http.Request, body []byte, sessionID, target string) (*http.Response, bool, error) {
	return f.forwardAt(ctx, rep.URL(), rep.Leaving(), in, body, sessionID, target)
}

func (f *httpForwarder) forwardAt(ctx context.Context, base *url.URL, closing bool, in *http.Request, body []byte, sessionID, target string) (*http.Response, bool, error) {
	var wrote bool
	trace := &httptrace.ClientTrace{
		WroteHeaderField: func(string, []string) { wrote = true },
	}
	// The replica's parsed URL is shared, not re-parsed per request: the
	// Transport only reads it.
	u := base
	if target != "" {
		ref, err := url.ParseRequestURI(target)
		if err != nil {
			return nil, false, fmt.Errorf("forwarding: request target: %w", err)
		}
		t := *u
		t.Path, t.RawPath, t.RawQuery = ref.Path, ref.RawPath, ref.RawQuery
		u = &t
	}
	out := (&http.Request{
		Method:     in.Method,
		URL:        u,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     make(http.Header, len(in.Header)+4),
		Host:       u.Host,
		Close:      closing,
	}).WithContext(httptrace.WithClientTrace(ctx, trace))
	if body != nil {
		out.Body = http.NoBody
		if len(body) > 0 {
			out.Body = readCloser{bytes.NewReader(body)}
			// With GetBody, net/http re-sends on a fresh connection when a
			// kept-alive one proves dead before anything was written.
			out.GetBody = func() (io.ReadCloser, error) { return readCloser{bytes.NewReader(body)}, nil }
		}
		out.ContentLength = int64(len(body))
	}
	copyRequestHeader(out.Header, in, f.proxies)
	if sessionID != "" {
		out.Header.Set("Mcp-Session-Id", sessionID)
	}
	resp, err := f.transport(u.Host, closing).RoundTrip(out)
	if err != nil {
		return nil, wrote, err
	}
	return resp, true, nil
}

func (f *httpForwarder) close() {
	f.t.CloseIdleConnections()
	f.closing.CloseIdleConnections()
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

// isHop reports a connection-level field (RFC 9110 section 7.6.1) that a
// proxy must not forward.
func isHop(k string) bool {
	switch k {
	case "Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
		"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade":
		return true
	}
	return false
}

// forwardsField reports whether the client's field k goes to the replica
// as it is: not a hop-by-hop field (nor one its Connection field names),
// not one the gateway sets itself or a proxy would (claimsOrigin), nor
// trusted, the field trusted proxies name the client in. Accept-Encoding
// stays behind because the relay must see SSE event boundaries to flush
// events and place keep-alives, so replicas answer uncompressed (loopback
// or a LAN between gateway and replica gains little from compression
// anyway).
func forwardsField(k string, connection []string, trusted string) bool {
	switch k {
	case "Accept-Encoding", "Content-Length", "Host", "Expect", trusted:
		return false
	}
	return !claimsOrigin(k) && !isHop(k) && !(len(connection) > 0 && listedIn(connection, k))
}

func forwardedProto(in *http.Request) string {
	if in.TLS != nil {
		return "https"
	}
	return "http"
}

// copyRequestHeader sets in dst the fields the replica gets: the client's
// that forwardsField lets through, then the gateway's own X-Forwarded-For,
// X-Forwarded-Host and X-Forwarded-Proto, and Forwarded in place of the
// client's when it sent one.
func copyRequestHeader(dst http.Header, in *http.Request, p *identity.Proxies) {
	connection, trusted := in.Header["Connection"], p.Header()
	for k, vv := range in.Header {
		if forwardsField(k, connection, trusted) {
			dst[k] = vv
		}
	}
	var buf [4]netip.Addr
	if chain := clientChain(buf[:0], in, p); len(chain) > 0 {
		dst.Set("X-Forwarded-For", string(appendXFF(nil, chain)))
		if _, ok := in.Header["Forwarded"]; ok {
			dst.Set("Forwarded", string(appendForwarded(nil, chain, in.Host, forwardedProto(in))))
		}
	}
	dst.Set("X-Forwarded-Host", in.Host)
	dst.Set("X-Forwarded-Proto", forwardedProto(in))
}

// removeHop drops a response's hop-by-hop fields before it is relayed.
func removeHop(h http.Header) {
	for _, f := range h.Values("Connection") {
		for _, name := range splitComma(f) {
			h.Del(name)
		}
	}
	for k := range h {
		if isHop(k) {
			delete(h, k)
		}
	}
}

// leanForwarder forwards to http replicas over internal/h1's pool, the
// goroutine that serves the client writing the request and reading the
// answer itself; https replicas go through net/http.
type leanForwarder struct {
	pool    *h1.Pool
	tls     *httpForwarder
	proxies *identity.Proxies // who may name the client; nil: nobody
}

var _ forwarder = (*leanForwarder)(nil)

// newLeanForwarder returns the forwarder of plain and TLS replicas; a
// positive maxConns bounds the connections open to each replica; proxies
// (nil: nobody) may name the client to them.
func newLeanForwarder(dial dialFunc, maxConns int, proxies *identity.Proxies) *leanForwarder {
	f := &leanForwarder{
		pool:    h1.NewPool(dial, 1024, 90*time.Second),
		tls:     newHTTPForwarder(dial, proxies),
		proxies: proxies,
	}
	f.pool.SetMaxConns(maxConns)
	f.tls.setMaxConnsPerHost(maxConns)
	return f
}

var fieldBufs = sync.Pool{New: func() any { b := make([]byte, 0, 2<<10); return &b }}

func (f *leanForwarder) forward(ctx context.Context, rep *upstream.Replica, in *http.Request, body []byte, sessionID, target string) (*http.Response, bool, error) {
	return f.forwardAt(ctx, rep.URL(), rep.Leaving(), in, body, sessionID, target)
}

func (f *leanForwarder) forwardAt(ctx context.Context, u *url.URL, closing bool, in *http.Request, body []byte, sessionID, target string) (*http.Response, bool, error) {
	if u.Scheme != "http" {
		return f.tls.forwardAt(ctx, u, closing, in, body, sessionID, target)
	}
	if target == "" {
		target = u.RequestURI()
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	bp := fieldBufs.Get().(*[]byte)
	req := h1.Request{
		Method:  in.Method,
		Target:  target,
		Host:    u.Host,
		Fields:  appendFields((*bp)[:0], in, sessionID, f.proxies),
		Body:    body,
		HasBody: body != nil,
		Close:   closing,
	}
	resp, delivered, err := f.pool.Do(ctx, addr, &req)
	*bp = req.Fields[:0]
	fieldBufs.Put(bp)
	return resp, delivered, err
}

func (f *leanForwarder) close() {
	f.pool.CloseIdle(true)
	f.tls.close()
}

// appendFields writes the client's header fields as the replica gets them,
// as copyRequestHeader does, without building a header map.
func appendFields(b []byte, in *http.Request, sessionID string, p *identity.Proxies) []byte {
	connection, trusted := in.Header["Connection"], p.Header()
	for k, vv := range in.Header {
		if !forwardsField(k, connection, trusted) || (sessionID != "" && k == "Mcp-Session-Id") {
			continue
		}
		for _, v := range vv {
			b = h1.AppendField(b, k, v)
		}
	}
	if sessionID != "" {
		b = h1.AppendField(b, "Mcp-Session-Id", sessionID)
	}
	proto := forwardedProto(in)
	var buf [4]netip.Addr
	if chain := clientChain(buf[:0], in, p); len(chain) > 0 {
		b = append(b, "X-Forwarded-For: "...)
		b = append(appendXFF(b, chain), '\r', '\n')
		if _, ok := in.Header["Forwarded"]; ok {
			b = append(b, "Forwarded: "...)
			b = append(appendForwarded(b, chain, in.Host, proto), '\r', '\n')
		}
	}
	b = h1.AppendField(b, "X-Forwarded-Host", in.Host)
	return h1.AppendField(b, "X-Forwarded-Proto", proto)
}

// listedIn reports whether a Connection header names the field k.
func listedIn(connection []string, k string) bool {
	for _, v := range connection {
		for _, name := range splitComma(v) {
			if strings.EqualFold(name, k) {
				return true
			}
		}
	}
	return false
}

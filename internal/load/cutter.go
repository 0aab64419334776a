package load

import (
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// cutter is the idle-timeout proxy the lab puts in front of a fleet: an
// HTTP reverse proxy that cuts a response whose body has been silent for
// longer than idle, as nginx's proxy_read_timeout and a cloud balancer's
// idle timeout do. It counts the streams it cut, and when.
type cutter struct {
	idle    time.Duration
	srv     *http.Server
	ln      net.Listener
	t0      time.Time
	mu      sync.Mutex      // guards cutAt and pending
	cutAt   []time.Duration // since t0, one per cut
	pending map[string]int  // cuts not resumed yet, by the client's Authorization
	cuts    atomic.Int64
}

// startCutter listens on a free loopback port and proxies to target.
func startCutter(target string, idle time.Duration, t0 time.Time) (*cutter, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c := &cutter{idle: idle, ln: ln, t0: t0, pending: map[string]int{}}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(&url.URL{Scheme: u.Scheme, Host: u.Host})
			r.Out.Host = u.Host
		},
		// A response whose headers do not come within the idle timeout is
		// cut too (nginx's proxy_read_timeout counts the wait for them):
		// a server that sends nothing until its answer is silent as well.
		Transport: &http.Transport{MaxIdleConnsPerHost: 256, IdleConnTimeout: 30 * time.Second,
			DisableCompression: true, ResponseHeaderTimeout: idle},
		FlushInterval: -1, // every write at once: SSE
		ModifyResponse: func(resp *http.Response) error {
			resp.Body = &idleBody{c: c, body: resp.Body, client: resp.Request.Header.Get("Authorization")}
			return nil
		},
		// A body read cut by the idle timeout makes the proxy abort the
		// client's connection (http.ErrAbortHandler): the client sees its
		// stream cut, as behind a real balancer.
		ErrorLog: log.New(io.Discard, "", 0),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			var to interface{ Timeout() bool }
			if errors.As(err, &to) && to.Timeout() && r.Context().Err() == nil {
				c.cut(r.Header.Get("Authorization"))
				w.WriteHeader(http.StatusGatewayTimeout)
				return
			}
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	c.srv = &http.Server{Handler: rp, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = c.srv.Serve(ln) }()
	return c, nil
}

// url is the proxy's MCP endpoint for target's path.
func (c *cutter) url(path string) string { return "http://" + c.ln.Addr().String() + path }

// close stops the proxy and every connection through it.
func (c *cutter) close() { _ = c.srv.Close() }

// count is how many streams the proxy cut.
func (c *cutter) count() int { return int(c.cuts.Load()) }

// times are the cuts' times since t0.
func (c *cutter) times() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.cutAt...)
}

// errIdleCut is a body read that waited longer than the idle timeout.
var errIdleCut = errors.New("idle timeout: stream cut")

// cut counts a stream of client (its Authorization) cut now.
func (c *cutter) cut(client string) {
	c.cuts.Add(1)
	c.mu.Lock()
	c.cutAt = append(c.cutAt, time.Since(c.t0))
	c.pending[client]++
	c.mu.Unlock()
}

// resumed reports whether client (its Authorization) has a cut stream not
// yet resumed, and counts one resumed.
func (c *cutter) resumed(client string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending[client] == 0 {
		return false
	}
	c.pending[client]--
	return true
}

// idleBody is an upstream body: a read that returns nothing for the idle
// timeout fails with errIdleCut and closes the body. One timer per body,
// reset at each read, closes it: the blocked read then returns.
type idleBody struct {
	c      *cutter
	body   io.ReadCloser
	client string
	timer  *time.Timer
	fired  atomic.Bool
}

func (b *idleBody) Read(p []byte) (int, error) {
	if b.timer == nil {
		b.timer = time.AfterFunc(b.c.idle, func() {
			b.fired.Store(true)
			_ = b.body.Close()
		})
	} else {
		b.timer.Reset(b.c.idle)
	}
	n, err := b.body.Read(p)
	if !b.timer.Stop() && b.fired.Load() {
		b.c.cut(b.client)
		return 0, errIdleCut
	}
	return n, err
}

func (b *idleBody) Close() error {
	if b.timer != nil {
		b.timer.Stop()
	}
	return b.body.Close()
}

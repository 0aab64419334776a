package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"runtime"
	"sync"

	"github.com/mcpfleet/mcpfleet/internal/identity"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// localForwarder hands a replica's POSTs to a handler in this process
// when Options.Local names one for its host (a stdio child's bridge),
// instead of an HTTP round trip on the bridge's socket: the request is
// not written and read again, nor is the answer. Everything else (a GET's
// stream, which parks on its socket between events; a DELETE; another
// endpoint; any other replica) goes to next, as before.
type localForwarder struct {
	local   func(host string) http.Handler
	next    forwarder
	log     *slog.Logger
	proxies *identity.Proxies // who may name the client; nil: nobody
}

var _ forwarder = (*localForwarder)(nil)

func (f *localForwarder) forward(ctx context.Context, rep *upstream.Replica, in *http.Request, body []byte, sessionID, target string) (*http.Response, bool, error) {
	return f.forwardAt(ctx, rep.URL(), rep.Leaving(), in, body, sessionID, target)
}

func (f *localForwarder) forwardAt(ctx context.Context, u *url.URL, closing bool, in *http.Request, body []byte, sessionID, target string) (*http.Response, bool, error) {
	var h http.Handler
	if in.Method == http.MethodPost && target == "" && u.Scheme == "http" {
		h = f.local(u.Host)
	}
	if h == nil {
		return f.next.forwardAt(ctx, u, closing, in, body, sessionID, target)
	}
	return serveLocal(ctx, h, localRequest(u, in, body, sessionID, f.proxies), f.log)
}

func (f *localForwarder) close() {
	if c, ok := f.next.(interface{ close() }); ok {
		c.close()
	}
}

// localRequest is in as the handler gets it: the replica's URL, the
// header a replica gets over the network (copyRequestHeader), the
// replica's own session ID in place of the client's. serveLocal gives it
// its context.
func localRequest(u *url.URL, in *http.Request, body []byte, sessionID string, p *identity.Proxies) *http.Request {
	h := make(http.Header, len(in.Header)+2)
	copyRequestHeader(h, in, p)
	if sessionID != "" {
		h["Mcp-Session-Id"] = []string{sessionID}
	}
	return &http.Request{
		Method:        in.Method,
		URL:           u,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Host:          u.Host,
		RemoteAddr:    "local",
		RequestURI:    u.RequestURI(),
	}
}

// errLocalPanic is the answer of a handler that panicked before its head.
var errLocalPanic = errors.New("the replica's handler failed")

// serveLocal runs h for r on a goroutine of its own and returns its answer
// once its head is out, the body a pipe the handler writes into: a write
// waits until the gateway reads it, as a socket's would once its buffer
// is full. Closing the body, or the end of ctx, ends r's context and
// fails the handler's next write. The request is delivered once h runs.
func serveLocal(ctx context.Context, h http.Handler, r *http.Request, log *slog.Logger) (*http.Response, bool, error) {
	ctx, cancel := context.WithCancel(ctx)
	r = r.WithContext(ctx)
	pr, pw := io.Pipe()
	w := &localWriter{header: http.Header{}, pw: pw, head: make(chan struct{})}
	go func() {
		defer func() {
			if p := recover(); p != nil {
				if p != http.ErrAbortHandler {
					buf := make([]byte, 16<<10)
					buf = buf[:runtime.Stack(buf, false)]
					log.Error("local replica handler panicked", "host", r.Host, "panic", fmt.Sprint(p), "stack", string(buf))
				}
				w.fail()
				pw.CloseWithError(errLocalPanic)
				return
			}
			w.WriteHeader(http.StatusOK) // a handler that wrote nothing
			pw.Close()
		}()
		h.ServeHTTP(w, r)
	}()
	select {
	case <-w.head:
	case <-ctx.Done():
		cancel()
		pr.Close()
		return nil, true, ctx.Err()
	}
	if w.failed {
		cancel()
		return nil, true, errLocalPanic
	}
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", w.code, http.StatusText(w.code)),
		StatusCode:    w.code,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        w.sent,
		Body:          &localBody{pr: pr, cancel: cancel},
		ContentLength: -1,
		Request:       r,
	}, true, nil
}

// localWriter is the handler's side of serveLocal.
type localWriter struct {
	header http.Header
	pw     *io.PipeWriter
	head   chan struct{} // closed once the head is out (or the handler failed)
	once   sync.Once
	code   int
	sent   http.Header // the header as it was when the head went out
	failed bool
}

func (w *localWriter) Header() http.Header { return w.header }

func (w *localWriter) WriteHeader(code int) {
	if code < 200 {
		return // an interim answer: the final one follows
	}
	w.once.Do(func() {
		w.code, w.sent = code, w.header.Clone()
		close(w.head)
	})
}

func (w *localWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.pw.Write(p)
}

// Flush sends the head; each write goes out at once.
func (w *localWriter) Flush() { w.WriteHeader(http.StatusOK) }

// fail ends a head not sent yet as a failure.
func (w *localWriter) fail() {
	w.once.Do(func() {
		w.failed = true
		close(w.head)
	})
}

// localBody is a local answer's body: closing it ends the handler's
// request.
type localBody struct {
	pr     *io.PipeReader
	cancel context.CancelFunc
}

func (b *localBody) Read(p []byte) (int, error) { return b.pr.Read(p) }

func (b *localBody) Close() error {
	b.cancel()
	return b.pr.Close()
}
